// Package telemetry is the reference functions' tracing: OTLP over HTTP
// when the standard OTEL_* variables ask for it (the ADOT Lambda layer's
// convention: its collector listens on localhost:4318, and the function
// sets OTEL_EXPORTER_OTLP_ENDPOINT), nothing otherwise. Spans go as OTLP's
// JSON encoding (otlpjson.go).
package telemetry

import (
	"context"
	"log"
	"maps"
	"net/url"
	"os"
	"slices"
	"strings"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
)

// Start installs, as the global TracerProvider, one that exports to the
// OTLP endpoint the environment names, and returns what flushes its spans:
// a Lambda environment is frozen between invokes, so each invoke's spans
// are sent before it answers. With no endpoint named, or
// OTEL_TRACES_EXPORTER=none or OTEL_SDK_DISABLED=true, it installs nothing
// and flush does nothing.
func Start(_ context.Context) (flush func(context.Context), err error) {
	noop := func(context.Context) {}
	if !wanted() {
		return noop, nil
	}
	exp, err := newExporter()
	if err != nil {
		return noop, err
	}
	p := &provider{exp: exp, resource: resourceAttrs()}
	otel.SetTracerProvider(p)
	return func(ctx context.Context) {
		// Within the invoke's deadline: a collector that does not answer
		// loses this invoke's spans, never the invoke.
		limit := 2 * time.Second
		if dl, ok := ctx.Deadline(); ok {
			limit = min(limit, time.Until(dl)-flushMargin)
		}
		if limit <= 0 {
			p.drop()
			return
		}
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), limit)
		defer cancel()
		_ = p.flush(ctx)
	}, nil
}

// flushMargin is the time left before an invoke's deadline for its
// answer once the spans are sent.
const flushMargin = 100 * time.Millisecond

// wanted reads the OTEL_* variables as the SDKs do.
func wanted() bool {
	if strings.EqualFold(os.Getenv("OTEL_SDK_DISABLED"), "true") {
		return false
	}
	switch strings.ToLower(os.Getenv("OTEL_TRACES_EXPORTER")) {
	case "", "otlp":
	default:
		return false
	}
	if os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT") == "" && os.Getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") == "" {
		return false
	}
	protocol := os.Getenv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")
	if protocol == "" {
		protocol = os.Getenv("OTEL_EXPORTER_OTLP_PROTOCOL")
	}
	if protocol == "grpc" { // OTLP over HTTP only; a collector's HTTP port takes JSON and protobuf alike
		log.Printf("telemetry: OTEL_EXPORTER_OTLP_PROTOCOL=grpc: this function exports OTLP over HTTP only (http/json), so it exports no spans; set http/protobuf or http/json and the collector's HTTP endpoint (port 4318)")
		return false
	}
	return true
}

// Flushing is h, its spans flushed before each invoke answers.
func Flushing[E, R any](h func(context.Context, E) (R, error), flush func(context.Context)) func(context.Context, E) (R, error) {
	return func(ctx context.Context, e E) (R, error) {
		defer flush(ctx)
		return h(ctx, e)
	}
}

// resourceAttrs are OTEL_RESOURCE_ATTRIBUTES (k=v,…) and the function's
// own; its name (service.name) is OTEL_SERVICE_NAME, else the one those
// attributes give, else Lambda's function name.
func resourceAttrs() []attribute.KeyValue {
	m := map[string]string{"cloud.provider": "aws", "faas.name": os.Getenv("AWS_LAMBDA_FUNCTION_NAME")}
	for k, v := range keyValues(os.Getenv("OTEL_RESOURCE_ATTRIBUTES")) {
		m[k] = v
	}
	switch {
	case os.Getenv("OTEL_SERVICE_NAME") != "":
		m["service.name"] = os.Getenv("OTEL_SERVICE_NAME")
	case m["service.name"] == "":
		m["service.name"] = os.Getenv("AWS_LAMBDA_FUNCTION_NAME")
	}
	kvs := make([]attribute.KeyValue, 0, len(m))
	for _, k := range slices.Sorted(maps.Keys(m)) {
		kvs = append(kvs, attribute.String(k, m[k]))
	}
	return kvs
}

// keyValues reads the OTEL_* variables' k=v,k=v lists, whose values are
// percent-encoded (the W3C Baggage format).
func keyValues(list string) map[string]string {
	out := map[string]string{}
	for _, kv := range strings.Split(list, ",") {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || strings.TrimSpace(k) == "" {
			continue
		}
		if dec, err := url.PathUnescape(strings.TrimSpace(v)); err == nil {
			v = dec
		}
		out[strings.TrimSpace(k)] = strings.TrimSpace(v)
	}
	return out
}
