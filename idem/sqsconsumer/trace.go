package sqsconsumer

import (
	"github.com/aws/aws-lambda-go/events"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/idemkit/kit/idem/internal/seam"
	"github.com/idemkit/kit/idem/internal/tracectx"
)

// span names a record's delivery span as OpenTelemetry's messaging
// conventions name an SQS message's processing, continuing the trace the
// message carries: its AWSTraceHeader (which the kit's relay sets), else a
// "traceparent" message attribute.
func span(rec events.SQSMessage) seam.Span {
	queue := QueueName(rec.EventSourceARN)
	s := seam.Span{Name: "process " + queue, Kind: trace.SpanKindConsumer, Attrs: []attribute.KeyValue{
		attribute.String("messaging.system", "aws_sqs"), attribute.String("messaging.destination.name", queue),
		attribute.String("messaging.operation.type", "process"), attribute.String("messaging.operation.name", "process"),
		attribute.String("messaging.message.id", rec.MessageId), attribute.String("faas.trigger", "pubsub")}}
	if sc, ok := tracectx.ParseXRay(rec.Attributes["AWSTraceHeader"]); ok {
		s.Parent = sc
	} else if a, ok := rec.MessageAttributes["traceparent"]; ok && a.StringValue != nil {
		s.Parent, _ = tracectx.Parse(*a.StringValue)
	}
	return s
}
