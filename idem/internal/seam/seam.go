// Package seam is where the kit's own packages meet a Store beyond its
// public API: its adapters (idem/sqsconsumer, idem/kafkaconsumer,
// idem/webhook, idem/stream, through idem/internal/adapt) and the idem
// command reach what a Store does for them and not for its users (Open), and
// an adapter names a delivery's span and bounds its wait on the delivery's
// context, for the Store that starts it.
package seam

import (
	"context"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
)

// Span is how an adapter names the span of a delivery it hands a Store
// (OpenTelemetry's semantic conventions for its kind of message), and the
// trace context the message carried, which the delivery continues.
type Span struct {
	Name   string
	Kind   trace.SpanKind
	Attrs  []attribute.KeyValue
	Parent trace.SpanContext
}

// spans are the Spans an adapter set on a context: one delivery's, or a
// batch's by index.
type spans struct {
	one   Span
	batch []Span
}

type spansKey struct{}

// WithSpan carries s to the Store's delivery span.
func WithSpan(ctx context.Context, s Span) context.Context {
	return context.WithValue(ctx, spansKey{}, spans{one: s})
}

// WithBatchSpans carries the Span of each message of a batch
// (Store.ProcessBatch), by index.
func WithBatchSpans(ctx context.Context, s []Span) context.Context {
	return context.WithValue(ctx, spansKey{}, spans{batch: s})
}

// WithoutSpans is ctx with the Spans an adapter set spent: a Store's
// delivery sets it on its handler's context, so that a delivery made
// inside the handler takes neither its outer delivery's name nor its
// trace.
func WithoutSpans(ctx context.Context) context.Context {
	if _, ok := ctx.Value(spansKey{}).(spans); !ok {
		return ctx
	}
	return context.WithValue(ctx, spansKey{}, spans{})
}

// SpanFrom is the Span an adapter set, or the zero Span.
func SpanFrom(ctx context.Context) Span {
	s, _ := ctx.Value(spansKey{}).(spans)
	return s.one
}

// BatchSpanFrom is the Span of message i of a batch, or the zero Span.
func BatchSpanFrom(ctx context.Context, i int) Span {
	s, _ := ctx.Value(spansKey{}).(spans)
	if i < len(s.batch) {
		return s.batch[i]
	}
	return Span{}
}

// waitKey carries how long a delivery may wait for another delivery of
// its key in flight in the same process.
type waitKey struct{}

// WithWait bounds how long a delivery may wait for another delivery of its
// key that is running in the same process (a coalesced delivery) before it
// is answered as in flight (an *idem.InFlightError): an adapter whose
// caller gives up after a limit of its own (API Gateway's 29 seconds)
// answers in time. Without it a delivery waits until its context ends.
func WithWait(ctx context.Context, d time.Duration) context.Context {
	return context.WithValue(ctx, waitKey{}, max(d, 0))
}

// Wait is the bound WithWait set, and whether one was.
func Wait(ctx context.Context) (time.Duration, bool) {
	d, ok := ctx.Value(waitKey{}).(time.Duration)
	return d, ok
}
