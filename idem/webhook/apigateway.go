package webhook

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"strings"
	"unicode/utf8"

	"github.com/aws/aws-lambda-go/events"
)

// API Gateway's entries: HTTP API events (payload 2.0, also function
// URLs') and REST API proxy events (payload 1.0).

// HandleV2 serves an HTTP API delivery (payload format 2.0), or a Lambda
// function URL's. Every outcome is an HTTP response; the error is always
// nil, since API Gateway would turn it into a bare 502.
func (r *Receiver) HandleV2(ctx context.Context, e events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
	return r.handleV2(ctx, e, "")
}

// handleV2 is HandleV2 for a delivery a Mux routed by route ("" when none
// did).
func (r *Receiver) handleV2(ctx context.Context, e events.APIGatewayV2HTTPRequest, route string) (events.APIGatewayV2HTTPResponse, error) {
	req := Request{Method: e.RequestContext.HTTP.Method, Path: e.RawPath, Header: Header(e.Headers), Source: r.source(route),
		start: epochStart(e.RequestContext.TimeEpoch)}
	if _, tmpl, ok := strings.Cut(e.RouteKey, " "); ok { // "POST /items/{id}"; "$default" names none
		req.route = tmpl
	}
	resp := r.serve(ctx, req, eventBody(e.Body, e.IsBase64Encoded))
	body, b64 := wireBody(resp.Body)
	return events.APIGatewayV2HTTPResponse{StatusCode: resp.Status, Headers: resp.Headers, Body: body, IsBase64Encoded: b64}, nil
}

func (r *Receiver) handleV1(ctx context.Context, e events.APIGatewayProxyRequest, route string) (events.APIGatewayProxyResponse, error) {
	req := Request{Method: e.HTTPMethod, Path: e.Path, Header: headerV1(e.Headers, e.MultiValueHeaders), Source: r.source(route), route: e.Resource,
		start: epochStart(e.RequestContext.RequestTimeEpoch)}
	resp := r.serve(ctx, req, eventBody(e.Body, e.IsBase64Encoded))
	body, b64 := wireBody(resp.Body)
	return events.APIGatewayProxyResponse{StatusCode: resp.Status, Headers: resp.Headers, Body: body, IsBase64Encoded: b64}, nil
}

// wireBody is a body as API Gateway takes it: text, or base64 when it is
// not UTF-8.
func wireBody(b []byte) (string, bool) {
	if utf8.Valid(b) {
		return string(b), false
	}
	return base64.StdEncoding.EncodeToString(b), true
}

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
