package webhook

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"
)

// An Application Load Balancer's entry: a Lambda function registered in a
// target group.

// HandleALB serves a delivery from an Application Load Balancer's target
// group. Its headers come one value per name (the last of a repeated one,
// the target group's default) or, with lambda.multi_value_headers.enabled,
// as lists, joined here with commas as API Gateway joins them; the answer
// fills the field the load balancer reads (multiValueHeaders when the
// request came with them, else headers) and a statusDescription such as
// "200 OK". An ALB event has no timestamp: InFlightWait counts from the
// entry's start. Every outcome is an HTTP response; the error is always
// nil.
func (r *Receiver) HandleALB(ctx context.Context, e events.ALBTargetGroupRequest) (events.ALBTargetGroupResponse, error) {
	return r.handleALB(ctx, e, ""), nil
}

// handleALB is HandleALB for a delivery a Mux routed by route ("" when
// none did).
func (r *Receiver) handleALB(ctx context.Context, e events.ALBTargetGroupRequest, route string) events.ALBTargetGroupResponse {
	req := Request{Method: e.HTTPMethod, Path: e.Path, Header: headerV1(e.Headers, e.MultiValueHeaders), Source: r.source(route),
		route: routePath(route), start: time.Now()}
	return albResponse(r.serve(ctx, req, eventBody(e.Body, e.IsBase64Encoded)), e.MultiValueHeaders != nil)
}

// HandleALB routes a load balancer's delivery by its method and path.
func (m Mux) HandleALB(ctx context.Context, e events.ALBTargetGroupRequest) (events.ALBTargetGroupResponse, error) {
	r, route := m.match(e.HTTPMethod, e.Path)
	if r == nil {
		return albResponse(notFound(e.HTTPMethod, e.Path), e.MultiValueHeaders != nil), nil
	}
	return r.handleALB(ctx, e, route), nil
}

// albResponse is resp as the load balancer reads it: headers in the
// format the target group is set to (multi, as the request showed).
func albResponse(resp Response, multi bool) events.ALBTargetGroupResponse {
	body, b64 := wireBody(resp.Body)
	out := events.ALBTargetGroupResponse{StatusCode: resp.Status, Body: body, IsBase64Encoded: b64,
		StatusDescription: strings.TrimSpace(strconv.Itoa(resp.Status) + " " + http.StatusText(resp.Status))}
	if !multi {
		out.Headers = resp.Headers
		return out
	}
	out.MultiValueHeaders = make(map[string][]string, len(resp.Headers))
	for k, v := range resp.Headers {
		out.MultiValueHeaders[k] = []string{v}
	}
	return out
}
