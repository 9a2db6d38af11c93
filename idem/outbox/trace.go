package outbox

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/idemkit/kit/idem/internal/tracectx"
)

// startSends starts each item's send span, as OpenTelemetry's messaging
// conventions name a send, a child of the trace its committing delivery
// stored with it (so one message's trace runs from the delivery through
// the relay to its consumer), and sets the X-Ray trace header the send
// carries on. With no TracerProvider installed the span is a no-op that
// keeps the stored context, which is carried on all the same.
func (r *Relay) startSends(ctx context.Context, items []item) []trace.Span {
	spans := make([]trace.Span, len(items))
	system, dest := "aws_sqs", items[0].destination
	if isEventBridge(dest) {
		system, dest = "aws.eventbridge", dest[len(eventBridgePrefix):]
	} else {
		dest = queueName(dest)
	}
	for k := range items {
		it := &items[k]
		sctx := ctx
		if sc, ok := tracectx.Parse(it.traceparent); ok {
			sctx = trace.ContextWithRemoteSpanContext(ctx, sc)
		}
		_, spans[k] = r.tracer.Start(sctx, "send "+dest, trace.WithSpanKind(trace.SpanKindProducer), trace.WithAttributes(
			attribute.String("messaging.system", system), attribute.String("messaging.destination.name", dest),
			attribute.String("messaging.operation.type", "send"), attribute.String("messaging.operation.name", "send"),
			attribute.String("messaging.message.itemID", it.itemID), attribute.Int("messaging.batch.message_count", len(items))))
		it.traceHeader = tracectx.XRay(spans[k].SpanContext())
	}
	return spans
}

// endSends ends the sends' spans: the items from k on failed with err.
func endSends(spans []trace.Span, k int, err error) {
	for i, s := range spans {
		if err != nil && i >= k {
			s.RecordError(err)
			s.SetStatus(codes.Error, "not sent")
		}
		s.End()
	}
}

// queueName is the last segment of a queue URL.
func queueName(url string) string {
	for i := len(url) - 1; i >= 0; i-- {
		if url[i] == '/' {
			return url[i+1:]
		}
	}
	return url
}
