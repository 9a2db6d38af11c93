// Package telemetry is the reference functions' tracing, with the
// OpenTelemetry SDK and its OTLP/HTTP exporter: Start installs them when
// the standard OTEL_* variables name an endpoint (the ADOT Lambda layer's
// convention: its collector listens on localhost:4318), nothing
// otherwise; Handler gives each invoke a span, the parent the kit's
// deliveries are traced under, and flushes the spans before the invoke
// answers.
package telemetry

import (
	"context"
	"log"
	"os"
	"strings"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
)

// Start installs, as the global TracerProvider, the SDK's, exporting to
// the OTLP endpoint the environment names, and returns it. With no
// endpoint named, or OTEL_TRACES_EXPORTER=none, or OTEL_SDK_DISABLED=true,
// it installs nothing and returns nil: the kit then starts no span.
//
// The SDK reads the rest of its environment itself: the exporter its
// endpoint, protocol (http/protobuf, the default, or http/json), headers,
// timeout and compression (OTEL_EXPORTER_OTLP_*); the provider its
// sampler (OTEL_TRACES_SAMPLER and _ARG: parent-based, always on, by
// default) and batching (OTEL_BSP_*); the resource OTEL_SERVICE_NAME and
// OTEL_RESOURCE_ATTRIBUTES, over the function's own (service.name
// defaults to the function's name).
func Start(ctx context.Context) (*sdktrace.TracerProvider, error) {
	if !wanted() {
		return nil, nil
	}
	exp, err := otlptracehttp.New(ctx)
	if err != nil {
		return nil, err
	}
	res, err := newResource(ctx)
	if err != nil {
		return nil, err
	}
	// Batched, and flushed at the end of each invoke (Handler): the
	// environment is frozen between invokes.
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	otel.SetTracerProvider(tp)
	return tp, nil
}

// wanted reads what the SDK leaves to the program, as the specification
// defines it: whether to trace at all (OTEL_SDK_DISABLED), with which
// exporter (OTEL_TRACES_EXPORTER), and whether that exporter can speak
// the protocol asked for (OTEL_EXPORTER_OTLP_PROTOCOL: the HTTP exporter
// reads http/protobuf and http/json itself; grpc needs another exporter).
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
	if protocol == "grpc" { // these functions link the HTTP exporter alone
		log.Printf("telemetry: OTEL_EXPORTER_OTLP_PROTOCOL=grpc: this function exports OTLP over HTTP only (http/protobuf), so it exports no spans; set http/protobuf and the collector's HTTP endpoint (port 4318)")
		return false
	}
	return true
}

// newResource is the function's resource: Lambda's variables, then
// OTEL_RESOURCE_ATTRIBUTES and OTEL_SERVICE_NAME over them.
func newResource(ctx context.Context) (*resource.Resource, error) {
	return resource.New(ctx,
		resource.WithTelemetrySDK(),
		resource.WithSchemaURL(semconv.SchemaURL),
		resource.WithAttributes(functionAttrs()...),
		resource.WithFromEnv()) // last: the environment's names win
}

// functionAttrs describe the function from the variables Lambda sets, as
// OpenTelemetry's FaaS resource conventions name them.
func functionAttrs() []attribute.KeyValue {
	attrs := []attribute.KeyValue{semconv.CloudProviderAWS, semconv.CloudPlatformAWSLambda}
	for k, v := range map[attribute.Key]string{
		semconv.ServiceNameKey:  os.Getenv("AWS_LAMBDA_FUNCTION_NAME"),
		semconv.FaaSNameKey:     os.Getenv("AWS_LAMBDA_FUNCTION_NAME"),
		semconv.CloudRegionKey:  os.Getenv("AWS_REGION"),
		semconv.FaaSVersionKey:  os.Getenv("AWS_LAMBDA_FUNCTION_VERSION"),
		semconv.FaaSInstanceKey: os.Getenv("AWS_LAMBDA_LOG_STREAM_NAME"),
	} {
		if v != "" {
			attrs = append(attrs, k.String(v))
		}
	}
	return attrs
}
