package webhook

import (
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/idemkit/kit/idem/internal/seam"
	"github.com/idemkit/kit/idem/internal/tracectx"
)

// span names a delivery's span as OpenTelemetry's HTTP server conventions
// do ("METHOD route", the route's template, never the raw path, whose ids
// would make a name per request), continuing the caller's trace (its
// traceparent header), which a sender instrumented with OpenTelemetry
// sends.
func span(req Request) seam.Span {
	s := seam.Span{Name: req.Method, Kind: trace.SpanKindServer, Attrs: []attribute.KeyValue{
		attribute.String("http.request.method", req.Method), attribute.String("url.path", req.Path), attribute.String("faas.trigger", "http")}}
	if req.route != "" {
		s.Name += " " + req.route
		s.Attrs = append(s.Attrs, attribute.String("http.route", req.route))
	}
	s.Parent, _ = tracectx.Parse(req.Header.Get("traceparent"))
	return s
}
