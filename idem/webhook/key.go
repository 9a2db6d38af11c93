package webhook

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"
)

// maxKeyBytes bounds an idempotency key.
const maxKeyBytes = 255

// IdempotencyKey reads the Idempotency-Key header
// (draft-ietf-httpapi-idempotency-key-header) or, when it is absent and
// field is not "", the body's top-level string field of that name. The
// header may be a bare value or the draft's structured-field string,
// "…" with \" and \\ escapes; both forms of one value are the same key. A
// bare value with a comma is refused: it is what two Idempotency-Key
// headers become once combined, as API Gateway combines them.
func IdempotencyKey(field string) func(h Header, body []byte) (string, error) {
	return func(h Header, body []byte) (string, error) {
		if v := h.Get("Idempotency-Key"); v != "" {
			return unquote(v)
		}
		if field == "" {
			return "", errors.New("no Idempotency-Key header")
		}
		k, err := bodyString(body, field)
		if err != nil {
			return "", fmt.Errorf("no Idempotency-Key header, and %w", err)
		}
		return k, nil
	}
}

// stripeEventID is Stripe's key: the event's top-level "id" (evt_…), which
// Stripe keeps across every retry of the event.
func stripeEventID(_ Header, body []byte) (string, error) {
	return bodyString(body, "id")
}

// gitHubDelivery is GitHub's key: the X-GitHub-Delivery GUID, which a
// redelivery keeps.
func gitHubDelivery(h Header, _ []byte) (string, error) {
	if v := h.Get("X-GitHub-Delivery"); v != "" {
		// A GUID has no comma: one here is two headers joined, and either
		// alone would be another key on a retry.
		if strings.Contains(v, ",") {
			return "", errors.New("the X-GitHub-Delivery header holds more than one value")
		}
		return v, nil
	}
	return "", errors.New("no X-GitHub-Delivery header")
}

// bodyString reads a top-level string field of a JSON object, matched
// exactly (see topFields).
func bodyString(body []byte, field string) (string, error) {
	raw, err := topFields(body, field)
	if err != nil {
		return "", err
	}
	if raw[0] == nil {
		return "", fmt.Errorf("the body has no %q field", field)
	}
	var s string
	if err := json.Unmarshal(raw[0], &s); err != nil {
		return "", fmt.Errorf("the body's %q field is not a string", field)
	}
	return s, nil
}

// unquote reads a structured-field string ("…"); any other value is
// returned as it is, unless it holds a comma: two header values joined
// (RFC 9110, section 5.3), and which one the sender meant cannot be told.
func unquote(v string) (string, error) {
	// A field value's leading and trailing spaces and tabs are no part of
	// it (RFC 9110, 5.5): " k" is the key "k", which one client's retry
	// may send without them.
	v = strings.Trim(v, " \t")
	if len(v) < 2 || v[0] != '"' || v[len(v)-1] != '"' {
		switch {
		case strings.Contains(v, ","):
			return "", errors.New("the Idempotency-Key holds more than one value (a comma outside quotes); send one key, quoted if it contains a comma")
		case strings.HasPrefix(v, `"`) || strings.HasSuffix(v, `"`):
			return "", errors.New(`the Idempotency-Key opens or closes a quoted string it does not close or open`)
		}
		return v, nil
	}
	b := make([]byte, 0, len(v)-2)
	for i := 1; i < len(v)-1; i++ {
		c := v[i]
		switch c {
		case '"':
			return "", errors.New(`the Idempotency-Key has an unescaped '"' inside its quotes`)
		case '\\':
			i++
			if i == len(v)-1 || v[i] != '"' && v[i] != '\\' {
				return "", errors.New(`the Idempotency-Key has a '\' not followed by '"' or '\'`)
			}
			c = v[i]
		}
		b = append(b, c)
	}
	return string(b), nil
}

// checkKey accepts 1 to maxKeyBytes printable ASCII characters (space to
// '~'), not all of them spaces: what a structured-field string may hold,
// and what fits a claim key with room to spare. A key of only spaces
// (`Idempotency-Key: "   "`) is a client's bug, refused as the empty one.
func checkKey(k string) error {
	if strings.TrimSpace(k) == "" {
		return errors.New("the idempotency key is empty")
	}
	if len(k) > maxKeyBytes {
		return fmt.Errorf("the idempotency key is %d bytes; at most %d are allowed", len(k), maxKeyBytes)
	}
	for i := 0; i < len(k); i++ {
		if c := k[i]; c < ' ' || c > '~' {
			return fmt.Errorf("the idempotency key has a control or non-ASCII character at byte %d; only printable ASCII is allowed", i)
		}
	}
	return nil
}

// checkJSON accepts exactly one JSON value in valid UTF-8. json.Valid
// refuses trailing data but not invalid UTF-8 inside strings, which
// Unmarshal would silently turn into U+FFFD.
func checkJSON(body []byte) error {
	switch {
	case len(body) == 0:
		return errors.New("the body is empty; a JSON value is expected")
	case !utf8.Valid(body):
		return errors.New("the body is not valid UTF-8")
	case !json.Valid(body):
		var v any
		if err := json.Unmarshal(body, &v); err != nil {
			return fmt.Errorf("the body is not one valid JSON value: %v", err)
		}
		return errors.New("the body is not one valid JSON value")
	}
	return nil
}
