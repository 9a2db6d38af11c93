package webhook

import (
	"net/http"
)

// Mux routes deliveries to Receivers by "METHOD /path", such as
// "POST /webhooks/stripe", so one function can serve several senders. An
// unknown route is a 404. A Receiver left at its default Source takes the
// route as its Source, so two routes never share keys; Receivers given
// one Source share its keys, as one provider's events sent to two routes
// are one event.
type Mux map[string]*Receiver

func notFound(method, path string) Response {
	return problem(http.StatusNotFound, "no webhook is served at "+method+" "+path)
}
