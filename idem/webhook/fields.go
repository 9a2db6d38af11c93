package webhook

import (
	"bytes"
	"encoding/json"
	"errors"
)

var errNotObject = errors.New("the body is not a JSON object")

// topFields returns the raw values of a JSON object's top-level fields
// named in names, nil for an absent one; as a map would, it matches names
// exactly (encoding/json's structs would take "ID" for "id") and keeps the
// last of repeated keys. body has passed checkJSON (one valid JSON value),
// so a scan that skips what it does not need is enough: no map of every
// field, and no copy of any value.
func topFields(body []byte, names ...string) ([]json.RawMessage, error) {
	out := make([]json.RawMessage, len(names))
	i := skipSpace(body, 0)
	if i >= len(body) || body[i] != '{' {
		return nil, errNotObject
	}
	i = skipSpace(body, i+1)
	if i < len(body) && body[i] == '}' {
		return out, nil
	}
	for i < len(body) {
		end := skipString(body, i)
		key := body[i:end]
		i = skipSpace(body, end)
		i = skipSpace(body, i+1) // the ':'
		vend := skipValue(body, i)
		for n, name := range names {
			if keyIs(key, name) {
				out[n] = body[i:vend]
			}
		}
		i = skipSpace(body, vend)
		if i >= len(body) || body[i] == '}' {
			return out, nil
		}
		i = skipSpace(body, i+1) // the ','
	}
	return out, nil
}

// keyIs compares a quoted JSON key with name, decoding it only when it
// holds an escape.
func keyIs(quoted []byte, name string) bool {
	if bytes.IndexByte(quoted, '\\') < 0 {
		return len(quoted) == len(name)+2 && string(quoted[1:len(quoted)-1]) == name
	}
	var k string
	return json.Unmarshal(quoted, &k) == nil && k == name
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// skipString returns the index after the string starting at b[i] == '"'.
func skipString(b []byte, i int) int {
	for i++; i < len(b); i++ {
		switch b[i] {
		case '\\':
			i++
		case '"':
			return i + 1
		}
	}
	return len(b)
}

// skipValue returns the index after the value starting at b[i].
func skipValue(b []byte, i int) int {
	if i >= len(b) {
		return i
	}
	switch b[i] {
	case '"':
		return skipString(b, i)
	case '{', '[':
		depth := 0
		for ; i < len(b); i++ {
			switch b[i] {
			case '"':
				i = skipString(b, i) - 1
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					return i + 1
				}
			}
		}
		return len(b)
	}
	for i < len(b) && b[i] != ',' && b[i] != '}' && b[i] != ']' && b[i] != ' ' && b[i] != '\t' && b[i] != '\n' && b[i] != '\r' {
		i++
	}
	return i
}
