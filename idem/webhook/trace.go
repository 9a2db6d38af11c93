package webhook

import (
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/idemkit/kit/idem/internal/hook"
	"github.com/idemkit/kit/idem/internal/tracectx"
)

// span names a delivery's span as OpenTelemetry's HTTP server conventions
// do, continuing the caller's trace (its traceparent header), which a
// sender instrumented with OpenTelemetry sends.
func span(req Request) hook.Span {
	s := hook.Span{Name: req.Method + " " + req.Path, Kind: trace.SpanKindServer, Attrs: []attribute.KeyValue{
		attribute.String("http.request.method", req.Method), attribute.String("url.path", req.Path), attribute.String("faas.trigger", "http")}}
	s.Parent, _ = tracectx.Parse(req.Header.Get("traceparent"))
	return s
}
