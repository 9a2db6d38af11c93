package telemetry

import (
	"context"
	"fmt"
	"os"
	"sync/atomic"
	"time"

	"github.com/aws/aws-lambda-go/lambdacontext"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"
)

// Handler is h with each invoke in a span of tp's, as OpenTelemetry's FaaS
// conventions describe an invocation (what otellambda's wrapper does), and
// tp's spans flushed before the invoke answers: a Lambda environment is
// frozen between invokes. The kit traces a delivery whose context carries
// that recording span (idem.Options.TracerProvider). With tp nil (Start
// installed nothing), h itself.
func Handler[E, R any](tp *sdktrace.TracerProvider, h func(context.Context, E) (R, error)) func(context.Context, E) (R, error) {
	if tp == nil {
		return h
	}
	tracer := tp.Tracer("github.com/idemkit/kit/functions/internal/telemetry")
	name := os.Getenv("AWS_LAMBDA_FUNCTION_NAME")
	var warm atomic.Bool // the environment's first invoke is its cold start
	return func(ctx context.Context, e E) (_ R, err error) {
		attrs := []attribute.KeyValue{semconv.FaaSColdstart(!warm.Swap(true))}
		if lc, ok := lambdacontext.FromContext(ctx); ok {
			attrs = append(attrs, semconv.FaaSInvocationID(lc.AwsRequestID), semconv.CloudResourceID(lc.InvokedFunctionArn))
		}
		ctx, span := tracer.Start(ctx, name, trace.WithSpanKind(trace.SpanKindServer), trace.WithAttributes(attrs...))
		defer func() {
			if err != nil { // by type: a message may carry what a trace should not
				span.SetAttributes(semconv.ErrorTypeKey.String(fmt.Sprintf("%T", err)))
				span.SetStatus(codes.Error, fmt.Sprintf("%T", err))
			}
			span.End()
			flush(ctx, tp)
		}()
		return h(ctx, e)
	}
}

// flushMargin is the time left before an invoke's deadline for its
// answer once the spans are sent.
const flushMargin = 100 * time.Millisecond

// flush exports tp's ended spans within ctx's deadline: a collector that
// does not answer costs the invoke its spans, never the invoke.
func flush(ctx context.Context, tp *sdktrace.TracerProvider) {
	dl, ok := ctx.Deadline()
	ctx = context.WithoutCancel(ctx) // the invoke's answer is ready; its deadline still holds
	if ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, dl.Add(-flushMargin))
		defer cancel()
	}
	if err := tp.ForceFlush(ctx); err != nil {
		otel.Handle(err)
	}
}
