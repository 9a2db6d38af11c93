package webhook

import (
	"net/http"
	"strings"
)

// Mux routes deliveries to Receivers by "METHOD /path", such as
// "POST /webhooks/stripe", so one function can serve several senders. An
// unknown route is a 404. A Receiver left at its default Source takes the
// route as its Source, so two routes never share keys (as it takes an
// http.ServeMux's pattern, "POST /charges"); Receivers given
// one Source share its keys, as one provider's events sent to two routes
// are one event. It serves every entry a Receiver does: HandleV2 and
// Handle (API Gateway), HandleALB, ServeHTTP.
type Mux map[string]*Receiver

// match is the Receiver served at method and path, and its route.
func (m Mux) match(method, path string) (*Receiver, string) {
	route := method + " " + path
	return m[route], route
}

// routePath is a route's path ("/charges" of "POST /charges"), the
// template OpenTelemetry's http.route names, or "" for no route.
func routePath(route string) string {
	_, path, _ := strings.Cut(route, " ")
	return path
}

func notFound(method, path string) Response {
	return problem(http.StatusNotFound, "no webhook is served at "+method+" "+path)
}
