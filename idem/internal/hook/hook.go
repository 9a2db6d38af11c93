// Package hook carries, from idem to its adapters, what a Store does for
// an adapter and not for its users. It cannot name idem's types (idem
// imports it), so it holds idem's implementation untyped; the adapters
// reach it typed, through idem/internal/adapt.
package hook

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
)

// Idem is set by idem's init to a value whose methods implement
// idem/internal/adapt's hooks.
var Idem any

// WebhookResponse is set by idem/webhook's init to its stored-response
// decoder, for commands (idem/cmd/idem) that show a claim's answer as the
// Receiver would replay it; nil when idem/webhook is not linked.
var WebhookResponse func(stored []byte) (status int, headers map[string]string, body []byte, err error)

// Span is how an adapter names the span of a delivery it hands a Store
// (OpenTelemetry's semantic conventions for its kind of message), and the
// trace context the message carried, which the delivery continues.
type Span struct {
	Name   string
	Kind   trace.SpanKind
	Attrs  []attribute.KeyValue
	Parent trace.SpanContext
}

// key is the one context key of a delivery's trace: an adapter's Span or
// a batch's []Span, then, once the Store starts the delivery, the
// delivery's own value (WithDelivery), which hides them: a delivery made
// inside a handler takes neither its outer delivery's name nor its trace.
type key struct{}

// WithSpan carries s to the Store's delivery span.
func WithSpan(ctx context.Context, s Span) context.Context {
	return context.WithValue(ctx, key{}, s)
}

// SpanFrom is the Span an adapter set, or the zero Span.
func SpanFrom(ctx context.Context) Span {
	s, _ := ctx.Value(key{}).(Span)
	return s
}

// WithBatchSpans carries the Span of each message of a batch
// (Store.ProcessBatch), by index.
func WithBatchSpans(ctx context.Context, s []Span) context.Context {
	return context.WithValue(ctx, key{}, s)
}

// BatchSpanFrom is the Span of message i of a batch, or the zero Span.
func BatchSpanFrom(ctx context.Context, i int) Span {
	s, _ := ctx.Value(key{}).([]Span)
	if i < len(s) {
		return s[i]
	}
	return Span{}
}

// WithDelivery marks ctx as a delivery's, with the Store's value for it.
func WithDelivery(ctx context.Context, v any) context.Context {
	return context.WithValue(ctx, key{}, v)
}

// Delivery is the value WithDelivery set, or nil.
func Delivery(ctx context.Context) any { return ctx.Value(key{}) }
