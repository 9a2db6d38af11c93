package webhook

import (
	"slices"
	"strings"
)

// Header holds a delivery's headers, one value per name. Get matches names
// case-insensitively, as HTTP does: API Gateway's HTTP API sends them in
// lower case, its REST API as the client wrote them.
type Header map[string]string

// Get returns the value of the header name, or "" when it is absent. When
// the map holds the name in several spellings with different values (a
// REST API event carries them as the client sent them), they are one
// header sent twice: Get joins the values with commas, in the order of
// the spellings, as HTTP combines a repeated header, so a retry reads the
// same value whatever the map's order; a key read from it is then refused
// as more than one value.
func (h Header) Get(name string) string {
	var (
		v     string
		found string // the spelling v came from
		more  bool
	)
	for k, kv := range h {
		if !strings.EqualFold(k, name) {
			continue
		}
		switch {
		case found == "":
			v, found = kv, k
		case kv != v:
			more = true
		}
	}
	if !more {
		return v
	}
	var names []string
	for k := range h {
		if strings.EqualFold(k, name) {
			names = append(names, k)
		}
	}
	slices.Sort(names)
	vals := make([]string, len(names))
	for i, k := range names {
		vals[i] = h[k]
	}
	return strings.Join(vals, ",")
}

// headerV1 merges a REST API event's two header maps. Headers holds only
// the last value of a repeated header; the merged value joins them with
// commas, as payload v2 does. When nothing is repeated, Headers is used as
// it is, without copying.
func headerV1(single map[string]string, multi map[string][]string) Header {
	merge := false
	for k, vs := range multi {
		if _, ok := single[k]; len(vs) > 1 || !ok && len(vs) > 0 {
			merge = true
			break
		}
	}
	if !merge {
		return Header(single)
	}
	h := make(Header, len(single)+len(multi))
	for k, v := range single {
		h[k] = v
	}
	for k, vs := range multi {
		if len(vs) > 0 {
			h[k] = strings.Join(vs, ",")
		}
	}
	return h
}
