package webhook

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"

	"github.com/aws/aws-lambda-go/events"
)

// Mux routes deliveries to Receivers by "METHOD /path", such as
// "POST /webhooks/stripe", so one function can serve several senders. An
// unknown route is a 404. A Receiver left at its default Source takes the
// route as its Source, so two routes never share keys; Receivers given
// one Source share its keys, as one provider's events sent to two routes
// are one event.
type Mux map[string]*Receiver

// HandleV2 routes an HTTP API delivery (payload format 2.0) by its route
// key, else by its method and raw path, else, for a named stage, by its
// method and raw path without the stage's prefix.
func (m Mux) HandleV2(ctx context.Context, e events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
	method, path := e.RequestContext.HTTP.Method, e.RawPath
	route := e.RouteKey
	r := m[route]
	if r == nil {
		route = method + " " + path
		r = m[route]
	}
	if stage := e.RequestContext.Stage; r == nil && stage != "" && stage != "$default" {
		route = method + " " + strings.TrimPrefix(path, "/"+stage)
		r = m[route]
	}
	if r == nil {
		resp := notFound(method, path)
		return events.APIGatewayV2HTTPResponse{StatusCode: resp.Status, Headers: resp.Headers, Body: string(resp.Body)}, nil
	}
	return r.handleV2(ctx, e, route)
}

// handleV1 routes a REST API proxy delivery by its method and resource,
// else by its method and path.
func (m Mux) handleV1(ctx context.Context, e events.APIGatewayProxyRequest) (events.APIGatewayProxyResponse, error) {
	route := e.HTTPMethod + " " + e.Resource
	r := m[route]
	if r == nil {
		route = e.HTTPMethod + " " + e.Path
		r = m[route]
	}
	if r == nil {
		resp := notFound(e.HTTPMethod, e.Path)
		return events.APIGatewayProxyResponse{StatusCode: resp.Status, Headers: resp.Headers, Body: string(resp.Body)}, nil
	}
	return r.handleV1(ctx, e, route)
}

// Handle serves either payload format, told apart by the event's "version"
// and "httpMethod": a REST API's proxy events (payload format 1.0, routed
// by their method and resource, else their path), an HTTP API's, or a
// function behind both, or invoked locally with either kind of event. It returns an
// events.APIGatewayV2HTTPResponse or an events.APIGatewayProxyResponse, and
// an error only for an event that is neither.
func (m Mux) Handle(ctx context.Context, event json.RawMessage) (any, error) {
	var probe struct {
		Version    string `json:"version"`
		HTTPMethod string `json:"httpMethod"`
	}
	if err := json.Unmarshal(event, &probe); err != nil {
		return nil, &notAPIGatewayEvent{err.Error()}
	}
	switch {
	case probe.Version == "2.0":
		var e events.APIGatewayV2HTTPRequest
		if err := json.Unmarshal(event, &e); err != nil {
			return nil, &notAPIGatewayEvent{"payload 2.0: " + err.Error()}
		}
		return m.HandleV2(ctx, e)
	case probe.HTTPMethod != "":
		var e events.APIGatewayProxyRequest
		if err := json.Unmarshal(event, &e); err != nil {
			return nil, &notAPIGatewayEvent{"payload 1.0: " + err.Error()}
		}
		return m.handleV1(ctx, e)
	}
	return nil, &notAPIGatewayEvent{`it has neither "version": "2.0" nor "httpMethod"`}
}

// notAPIGatewayEvent is the one error Handle returns; Lambda reports it by
// this type's name.
type notAPIGatewayEvent struct{ reason string }

func (e *notAPIGatewayEvent) Error() string {
	return "webhook: the event is not an API Gateway request: " + e.reason
}

func notFound(method, path string) Response {
	return problem(http.StatusNotFound, "no webhook is served at "+method+" "+path)
}
