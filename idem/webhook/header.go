package webhook

import (
	"strings"
)

// Header holds a delivery's headers, one value per name. Get matches names
// case-insensitively, as HTTP does: API Gateway's HTTP API sends them in
// lower case, its REST API as the client wrote them.
type Header map[string]string

// Get returns the value of the header name, or "" when it is absent.
func (h Header) Get(name string) string {
	if v, ok := h[name]; ok {
		return v
	}
	for k, v := range h {
		if strings.EqualFold(k, name) {
			return v
		}
	}
	return ""
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
