package idem

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/aws/aws-lambda-go/lambdacontext"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/idemkit/kit/idem/internal/seam"
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
// parent-based sampler would decide. A delivery's span starts with it
// (startDelivery) and ends with its outcome (deliveryTrace.end); here is
// what they share, and the calls' spans.

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

// tracing reports whether a delivery given ctx is traced, by the rule on
// Options.TracerProvider: with one set, always (but for OpenTelemetry's
// no-op provider, which would record nothing); with none, the global one
// while ctx carries a recording span, such as an invoke's under
// otellambda. Reading the context costs nothing, so with no provider
// installed a delivery starts no span, not even a no-op one, and its
// adapter gathers no attributes for one.
func (s *Store) tracing(ctx context.Context) bool {
	switch s.opts.TracerProvider.(type) {
	case nil:
		return trace.SpanFromContext(ctx).IsRecording()
	case noop.TracerProvider, *noop.TracerProvider:
		return false
	}
	return true
}

// deliveryTrace is what a delivery's span gathers on its way.
type deliveryTrace struct {
	span   trace.Span
	sends  int
	server bool // an HTTP server's span (a webhook's)
	ended  bool
}

// traceKey carries a started delivery's trace (nil when it is not
// traced), for the spans of its calls.
type traceKey struct{}

// withTrace is ctx marked as a started delivery's: its calls' spans are
// t's children (none when t is nil), and the adapter's names for its span
// are spent, so that a delivery made inside its handler takes neither its
// name nor its trace.
func withTrace(ctx context.Context, t *deliveryTrace) context.Context {
	return seam.WithoutSpans(context.WithValue(ctx, traceKey{}, t))
}

// traceFrom is the trace of the delivery ctx belongs to, or nil.
func traceFrom(ctx context.Context) *deliveryTrace {
	t, _ := ctx.Value(traceKey{}).(*deliveryTrace)
	return t
}

// startDelivery starts msg's span: named and attributed by the adapter
// that received it (seam.WithSpan), else "process <source>", a child of the
// message's own trace context when the adapter read one; batch is the
// message's place in a batch (seam.WithBatchSpans), or -1. Nil when no
// span is recorded.
func (s *Store) startDelivery(ctx context.Context, msg Message, batch int) (context.Context, *deliveryTrace) {
	if !s.tracing(ctx) {
		if traceFrom(ctx) != nil { // inside another delivery's handler: not its calls
			ctx = withTrace(ctx, nil)
		}
		return ctx, nil
	}
	d := seam.SpanFrom(ctx)
	if batch >= 0 {
		d = seam.BatchSpanFrom(ctx, batch)
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
		return withTrace(ctx, nil), nil
	}
	t := &deliveryTrace{span: span, server: d.Kind == trace.SpanKindServer}
	return withTrace(ctx, t), t
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
	t := traceFrom(ctx)
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

// traceContext is the W3C traceparent of ctx's span (version 00), stored
// with the outgoing messages a delivery commits, or "" when none is
// sampled.
func traceContext(ctx context.Context) string {
	sc := trace.SpanContextFromContext(ctx)
	if !sc.IsSampled() {
		return ""
	}
	return "00-" + sc.TraceID().String() + "-" + sc.SpanID().String() + "-" + sc.TraceFlags().String()
}

// tablesOf is the tables items write, each once, for a call's span.
func tablesOf(items []types.TransactWriteItem) []string {
	var out []string
	for _, w := range items {
		if t := writeTable(w); t != "" && !slices.Contains(out, t) {
			out = append(out, t)
		}
	}
	return out
}

// writeTable is the table w names (its first operation's, when it has
// several), read without measuring the write, for spans and errors.
func writeTable(w types.TransactWriteItem) string {
	table, _ := writeKey(w)
	return table
}

// writeKey is the table w names and its Key (nil for a Put), read without
// measuring the write.
func writeKey(w types.TransactWriteItem) (table string, key map[string]types.AttributeValue) {
	switch {
	case w.Put != nil:
		return aws.ToString(w.Put.TableName), nil
	case w.Update != nil:
		return aws.ToString(w.Update.TableName), w.Update.Key
	case w.Delete != nil:
		return aws.ToString(w.Delete.TableName), w.Delete.Key
	case w.ConditionCheck != nil:
		return aws.ToString(w.ConditionCheck.TableName), w.ConditionCheck.Key
	}
	return "", nil
}
