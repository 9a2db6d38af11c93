package kafkaconsumer

import (
	"strconv"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/idemkit/kit/idem/internal/seam"
	"github.com/idemkit/kit/idem/internal/tracectx"
)

// span names a record's delivery span as OpenTelemetry's messaging
// conventions name a Kafka record's processing, continuing the trace its
// "traceparent" header carries (W3C Trace Context, as OpenTelemetry's
// Kafka instrumentations propagate it).
func span(r record) seam.Span {
	s := seam.Span{Name: "process " + r.rec.Topic, Kind: trace.SpanKindConsumer, Attrs: []attribute.KeyValue{
		attribute.String("messaging.system", "kafka"), attribute.String("messaging.destination.name", r.rec.Topic),
		attribute.String("messaging.destination.partition.id", strconv.FormatInt(r.rec.Partition, 10)), attribute.Int64("messaging.kafka.offset", r.rec.Offset),
		attribute.String("messaging.operation.type", "process"), attribute.String("messaging.operation.name", "process"),
		attribute.String("faas.trigger", "pubsub")}}
	// The last traceparent header, as Kafka's Headers.lastHeader reads
	// a header given more than once.
	for i := len(r.rec.Headers) - 1; i >= 0; i-- {
		if v, ok := r.rec.Headers[i]["traceparent"]; ok {
			s.Parent, _ = tracectx.Parse(string(v))
			break
		}
	}
	return s
}
