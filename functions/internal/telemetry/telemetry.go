// Package telemetry is the reference functions' tracing: OTLP over HTTP
// when the standard OTEL_* variables ask for it (the ADOT Lambda layer's
// convention: its collector listens on localhost:4318, and the function
// sets OTEL_EXPORTER_OTLP_ENDPOINT), nothing otherwise. Spans go as OTLP's
// JSON encoding (otlpjson.go).
package telemetry

import (
	"context"
	"os"
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
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
		defer cancel()
		_ = p.flush(ctx) // a collector that does not answer loses this invoke's spans, not the invoke
	}, nil
}

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
	return os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || os.Getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != ""
}

// Flushing is h, its spans flushed before each invoke answers.
func Flushing[E, R any](h func(context.Context, E) (R, error), flush func(context.Context)) func(context.Context, E) (R, error) {
	return func(ctx context.Context, e E) (R, error) {
		defer flush(ctx)
		return h(ctx, e)
	}
}

// resourceAttrs names the function, as OTEL_SERVICE_NAME and the
// OTEL_RESOURCE_ATTRIBUTES (k=v,…) say, else as Lambda does.
func resourceAttrs() []attribute.KeyValue {
	name := os.Getenv("OTEL_SERVICE_NAME")
	if name == "" {
		name = os.Getenv("AWS_LAMBDA_FUNCTION_NAME")
	}
	kvs := []attribute.KeyValue{attribute.String("service.name", name), attribute.String("cloud.provider", "aws"),
		attribute.String("faas.name", os.Getenv("AWS_LAMBDA_FUNCTION_NAME"))}
	for _, kv := range strings.Split(os.Getenv("OTEL_RESOURCE_ATTRIBUTES"), ",") {
		if k, v, ok := strings.Cut(kv, "="); ok {
			kvs = append(kvs, attribute.String(strings.TrimSpace(k), strings.TrimSpace(v)))
		}
	}
	return kvs
}
