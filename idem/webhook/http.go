package webhook

import (
	"errors"
	"io"
	"maps"
	"net/http"
	"slices"
	"strings"
	"time"
)

// net/http's entry: lambdaurl.Start (a function URL in response-streaming
// mode), the Lambda Web Adapter, and plain servers (ECS, EKS).

// ServeHTTP serves a delivery as an http.Handler. The body is read up to
// Options.MaxBodyBytes (http.MaxBytesReader; a larger one is a 413, as on
// every entry); a header sent more than once is one value, its values
// joined with commas as API Gateway joins them, so a key sent twice is
// refused alike; the request's context is the delivery's, its deadline
// included (under lambdaurl, the invoke's). Served by an http.ServeMux, a
// Receiver left at its default Source scopes its keys to the pattern the
// request matched, as a Mux's route (Options.Source).
func (r *Receiver) ServeHTTP(w http.ResponseWriter, hr *http.Request) {
	writeResponse(w, r.serveHTTP(w, hr, ""))
}

// serveHTTP is ServeHTTP for a delivery a Mux routed by route ("" when
// none did). A delivery an http.ServeMux routed has the pattern it
// matched as its route, as a Mux's: a Receiver left at its default Source
// scopes its keys to it.
func (r *Receiver) serveHTTP(w http.ResponseWriter, hr *http.Request, route string) Response {
	path := routePath(route)
	if route == "" && hr.Pattern != "" {
		route = patternRoute(hr.Method, hr.Pattern)
		if i := strings.IndexByte(hr.Pattern, '/'); i >= 0 { // "POST /items/{id}", "POST example.com/items"
			path = hr.Pattern[i:]
		}
	}
	req := Request{Method: hr.Method, Path: hr.URL.EscapedPath(), Header: headerHTTP(hr), Source: r.source(route),
		route: path, start: time.Now()}
	return r.serve(hr.Context(), req, httpBody(w, hr))
}

// patternRoute is the route an http.ServeMux's pattern names, as a Mux
// names its routes: "POST /credits" for "POST /credits" (and for
// "POST\t/credits"), the request's method before a pattern that names
// none ("/credits" matched by a POST: "POST /credits").
func patternRoute(method, pattern string) string {
	if i := strings.IndexAny(pattern, " \t"); i >= 0 {
		return pattern[:i] + " " + strings.TrimLeft(pattern[i+1:], " \t")
	}
	return method + " " + pattern
}

// ServeHTTP routes a delivery by its method and escaped path (the raw
// path, as HandleV2 routes), such as "POST /webhooks/stripe".
func (m Mux) ServeHTTP(w http.ResponseWriter, hr *http.Request) {
	path := hr.URL.EscapedPath()
	r, route := m.match(hr.Method, path)
	if r == nil {
		writeResponse(w, notFound(hr.Method, path))
		return
	}
	writeResponse(w, r.serveHTTP(w, hr, route))
}

// headerHTTP is a request's headers, each name's values joined with
// commas, and its Host, which net/http keeps apart and API Gateway's
// events carry as a header.
func headerHTTP(hr *http.Request) Header {
	h := make(Header, len(hr.Header)+1)
	for k, vs := range hr.Header {
		if len(vs) > 0 {
			h[k] = strings.Join(vs, ",")
		}
	}
	if _, ok := hr.Header["Host"]; !ok && hr.Host != "" {
		h["Host"] = hr.Host
	}
	return h
}

// httpBody reads a request's body, at most limit bytes of it.
func httpBody(w http.ResponseWriter, hr *http.Request) body {
	return func(limit int) ([]byte, *failure) {
		if hr.Body == nil {
			return nil, nil
		}
		b, err := io.ReadAll(http.MaxBytesReader(w, hr.Body, int64(limit)))
		if tooBig := (*http.MaxBytesError)(nil); errors.As(err, &tooBig) {
			return nil, tooLarge(limit)
		}
		if err != nil {
			return nil, &failure{http.StatusBadRequest, "the body could not be read: " + err.Error(), err}
		}
		return b, nil
	}
}

// writeResponse writes resp in place of any header set before; two
// spellings of one name are sent as two values, in a fixed order.
func writeResponse(w http.ResponseWriter, resp Response) {
	h := w.Header()
	names := slices.Sorted(maps.Keys(resp.Headers))
	for _, k := range names {
		h.Del(k)
	}
	for _, k := range names {
		h.Add(k, resp.Headers[k])
	}
	w.WriteHeader(resp.Status)
	w.Write(resp.Body) // a sender gone before the answer: nothing to do, the claim is settled
}
