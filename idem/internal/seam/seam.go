// Package seam is where the kit's own packages meet a Store beyond its
// public API: its adapters (idem/sqsconsumer, idem/webhook, idem/stream)
// and the idem command reach what a Store does for them and not for its
// users through idem.Store.Adapter, which takes a Key that only packages
// of the kit can write; and an adapter names a delivery's span (a Span on
// the delivery's context) for the Store that starts it.
package seam

import (
	"context"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
)

// Key is the argument of idem.Store.Adapter: Key{} in the kit's packages.
// Its field's type is unexported, so no other package can write a value of
// its type.
type Key struct{ _ token }

type token struct{}

// Span is how an adapter names the span of a delivery it hands a Store
// (OpenTelemetry's semantic conventions for its kind of message), and the
// trace context the message carried, which the delivery continues.
type Span struct {
	Name   string
	Kind   trace.SpanKind
	Attrs  []attribute.KeyValue
	Parent trace.SpanContext
}

// spanKey is the one context key of a delivery's trace: an adapter's Span
// or a batch's []Span, then, once the Store starts the delivery, the
// Store's own value (WithDelivery), which hides them: a delivery made
// inside a handler takes neither its outer delivery's name nor its trace.
type spanKey struct{}

// WithSpan carries s to the Store's delivery span.
func WithSpan(ctx context.Context, s Span) context.Context {
	return context.WithValue(ctx, spanKey{}, s)
}

// SpanFrom is the Span an adapter set, or the zero Span.
func SpanFrom(ctx context.Context) Span {
	s, _ := ctx.Value(spanKey{}).(Span)
	return s
}

// WithBatchSpans carries the Span of each message of a batch
// (Store.ProcessBatch), by index.
func WithBatchSpans(ctx context.Context, s []Span) context.Context {
	return context.WithValue(ctx, spanKey{}, s)
}

// BatchSpanFrom is the Span of message i of a batch, or the zero Span.
func BatchSpanFrom(ctx context.Context, i int) Span {
	s, _ := ctx.Value(spanKey{}).([]Span)
	if i < len(s) {
		return s[i]
	}
	return Span{}
}

// WithDelivery marks ctx as a started delivery's, with the Store's value
// for it (its span's state, of the Store's own type), in the place of the
// adapter's Span.
func WithDelivery(ctx context.Context, v any) context.Context {
	return context.WithValue(ctx, spanKey{}, v)
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

// Delivery is what WithDelivery or an adapter set, or nil.
func Delivery(ctx context.Context) any { return ctx.Value(spanKey{}) }
