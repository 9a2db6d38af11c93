package idem

import (
	"context"
	"errors"
	"fmt"
	"reflect"

	"github.com/aws/aws-lambda-go/lambdacontext"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/idemkit/kit/idem/internal/hook"
	"github.com/idemkit/kit/idem/internal/wire"
)

// Traces: a span per delivery, named and attributed by its adapter as
// OpenTelemetry's semantic conventions name its kind of message, with the
// kit's own attributes (the outcome, the key hashed, never in clear);
// child spans for each DynamoDB call; the delivery's context stored with
// each outgoing message, for the relay to send on. The library uses the
// OpenTelemetry API alone. With no TracerProvider installed it starts no
// span at all, not even a no-op one, so that tracing costs nothing until a
// user installs one; child spans follow their delivery's: when it is not
// recorded (sampled out), neither are they, as the SDK's default
// parent-based sampler would decide.

const tracerName = "github.com/idemkit/kit/idem"

// Span attributes of the kit's own.
const (
	attrSource  = attribute.Key("idem.source")
	attrKeyHash = attribute.Key("idem.key.sha256") // the claim key's SHA-256, 16 hex digits: the key itself may be personal data
	attrOutcome = attribute.Key("idem.outcome")
	attrCached  = attribute.Key("idem.cached")
	attrSends   = attribute.Key("idem.attempts") // the transactions the delivery sent, the kit's retries included (the SDK's own retries within one are its call's)
	attrToken   = attribute.Key("idem.lease.token")
)

// unsetGlobal is OpenTelemetry's global TracerProvider as it is until one
// is installed (otel.SetTracerProvider): it hands out tracers that forward
// to the one installed later, and until then start no-op spans. Nil if
// something installed one before this package's init.
var unsetGlobal = func() trace.TracerProvider {
	tp := otel.GetTracerProvider()
	if reflect.TypeOf(tp).String() != "*global.tracerProvider" {
		return nil
	}
	return tp
}()

// tracing reports whether a TracerProvider is installed now: a delivery's
// spans, and the attributes adapters gather for them, are then worth
// their cost.
func (s *Store) tracing() bool {
	switch tp := s.opts.TracerProvider; {
	case tp == unsetGlobal:
		return otel.GetTracerProvider() != unsetGlobal
	case reflect.TypeOf(tp) == noopType:
		return false
	}
	return true
}

var noopType = reflect.TypeFor[noop.TracerProvider]()

// deliveryTrace is what a delivery's span gathers on its way.
type deliveryTrace struct {
	span   trace.Span
	sends  int
	server bool // an HTTP server's span (a webhook's)
	ended  bool
}

// startDelivery starts msg's span: named and attributed by the adapter
// that received it (hook.WithSpan), else "process <source>", a child of the
// message's own trace context when the adapter read one; batch is the
// message's place in a batch (hook.WithBatchSpans), or -1. Nil when no
// span is recorded.
func (s *Store) startDelivery(ctx context.Context, msg Message, batch int) (context.Context, *deliveryTrace) {
	if !s.tracing() {
		if hook.Delivery(ctx) != nil { // inside another delivery's handler: not its calls
			ctx = hook.WithDelivery(ctx, (*deliveryTrace)(nil))
		}
		return ctx, nil
	}
	d := hook.SpanFrom(ctx)
	if batch >= 0 {
		d = hook.BatchSpanFrom(ctx, batch)
	}
	if d.Name == "" {
		d.Name, d.Kind = "process "+msg.Source, trace.SpanKindConsumer
	}
	opts := []trace.SpanStartOption{trace.WithSpanKind(d.Kind), trace.WithAttributes(d.Attrs...), trace.WithAttributes(attrSource.String(msg.Source))}
	if lc, ok := lambdacontext.FromContext(ctx); ok {
		opts = append(opts, trace.WithAttributes(attribute.String("faas.invocation_id", lc.AwsRequestID), attribute.String("cloud.resource_id", lc.InvokedFunctionArn)))
	}
	if d.Parent.IsValid() {
		// The message's own trace continues; the invoke's, if any, is linked.
		if here := trace.SpanContextFromContext(ctx); here.IsValid() {
			opts = append(opts, trace.WithLinks(trace.Link{SpanContext: here}))
		}
		ctx = trace.ContextWithRemoteSpanContext(ctx, d.Parent)
	}
	ctx, span := s.tracer.Start(ctx, d.Name, opts...)
	if !span.IsRecording() {
		span.End()
		// Its context goes on, marked not sampled; its calls make no span.
		return hook.WithDelivery(ctx, (*deliveryTrace)(nil)), nil
	}
	t := &deliveryTrace{span: span, server: d.Kind == trace.SpanKindServer}
	return hook.WithDelivery(ctx, t), t
}

// end ends the delivery's span with what became of it. Errors are named
// by type, never by message: every message of the kit's names the key.
func (t *deliveryTrace) end(key string, res Result, err error) {
	if t == nil || t.ended {
		return
	}
	t.ended = true
	outcome := OutcomeOf(res, err)
	attrs := []attribute.KeyValue{attrOutcome.String(string(outcome)), attrCached.Bool(res.Cached), attrSends.Int(t.sends)}
	if key != "" {
		attrs = append(attrs, attrKeyHash.String(wire.KeyHash(key)))
	}
	if res.Record.Token != 0 {
		attrs = append(attrs, attrToken.Int64(res.Record.Token))
	}
	var fe *FencedError
	if errors.As(err, &fe) {
		attrs = append(attrs, attrToken.Int64(fe.Token))
	}
	if err != nil {
		attrs = append(attrs, attribute.String("error.type", fmt.Sprintf("%T", err)))
	}
	t.span.SetAttributes(attrs...)
	switch outcome {
	case Failed:
		t.span.SetStatus(codes.Error, string(outcome))
	case KeyReuse, Fenced:
		if !t.server { // an HTTP server's 4xx is the client's error, not the span's
			t.span.SetStatus(codes.Error, string(outcome))
		}
	}
	t.span.End()
}

// endAfterPanic ends the span of a delivery that a panic past every
// recovery cut short (a client's or a log handler's): deferred, it does
// nothing once end ran.
func (t *deliveryTrace) endAfterPanic() {
	if t == nil || t.ended {
		return
	}
	t.ended = true
	t.span.SetAttributes(attribute.String("error.type", "panic"))
	t.span.SetStatus(codes.Error, "panic")
	t.span.End()
}

// call starts a DynamoDB call's span, as OpenTelemetry names an AWS SDK
// call: "DynamoDB.<operation>", with the tables a transaction's items
// write, or the claims table; nil outside a recorded delivery. A
// transaction's counts its sends toward the delivery's attempts.
func (s *Store) call(ctx context.Context, operation string, items []types.TransactWriteItem) (context.Context, trace.Span) {
	t, _ := hook.Delivery(ctx).(*deliveryTrace)
	if t == nil {
		return ctx, nil
	}
	if operation == "TransactWriteItems" {
		t.sends++
	}
	tables := []string{s.table}
	if items != nil {
		tables = tablesOf(items)
	}
	return s.tracer.Start(ctx, "DynamoDB."+operation, trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(
		attribute.String("rpc.system", "aws-api"), attribute.String("rpc.service", "DynamoDB"), attribute.String("rpc.method", operation),
		attribute.String("db.system.name", "aws.dynamodb"), attribute.StringSlice("aws.dynamodb.table_names", tables)))
}

// endCall ends a call's span with its error, if any, named by its code:
// DynamoDB's messages may quote an item's values.
func endCall(span trace.Span, err error) {
	if span == nil {
		return
	}
	if err != nil {
		code := fmt.Sprintf("%T", err)
		var ae smithy.APIError
		if errors.As(err, &ae) {
			code = ae.ErrorCode()
		}
		span.SetAttributes(attribute.String("error.type", code))
		span.SetStatus(codes.Error, code)
	}
	span.End()
}

// traceParent is the W3C traceparent of ctx's span (version 00), stored
// with the outgoing messages a delivery commits, or "" when none is
// sampled.
func traceParent(ctx context.Context) string {
	sc := trace.SpanContextFromContext(ctx)
	if !sc.IsSampled() {
		return ""
	}
	return "00-" + sc.TraceID().String() + "-" + sc.SpanID().String() + "-" + sc.TraceFlags().String()
}
