package traces_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/idemkit/kit/idem"
	"github.com/idemkit/kit/idem/idemtest"
	"github.com/idemkit/kit/idem/kafkaconsumer"
)

// TestKafkaSpans: a record's delivery span is named and attributed as
// OpenTelemetry's messaging conventions name a Kafka record's processing
// (topic, partition, offset), continuing the trace its traceparent header
// carries; in batch mode the batch's transaction links every record's
// span.
func TestKafkaSpans(t *testing.T) {
	const traceparent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
	traced := idemtest.KafkaRecord("credits", 0, 15, `{"account":"acc-1","cents":1}`, map[string]string{kafkaconsumer.KeyHeader: "evt-1", "traceparent": traceparent})
	plain := idemtest.KafkaRecord("credits", 1, 7, `{"account":"acc-2","cents":1}`, nil)
	for _, tc := range []struct {
		name  string
		batch bool
	}{{"per record", false}, {"batch transactions", true}} {
		t.Run(tc.name, func(t *testing.T) {
			spans := tracetest.NewSpanRecorder()
			e := newEnv(t, func(o *idem.Options) {
				o.TracerProvider = sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))
			})
			h, err := kafkaconsumer.New(e.store, func(_ context.Context, rec events.KafkaRecord) (idem.Effect, error) {
				v, _ := base64.StdEncoding.DecodeString(rec.Value)
				return e.handler(events.SQSMessage{Body: string(v)})
			}, func(o *kafkaconsumer.Options) { o.BatchTransactions = tc.batch })
			if err != nil {
				t.Fatal(err)
			}
			if resp, err := h(context.Background(), idemtest.KafkaEvent(traced, plain)); err != nil || len(resp.BatchItemFailures) > 0 {
				t.Fatalf("%v %v", resp, err)
			}
			byPlace := map[string]sdktrace.ReadOnlySpan{}
			var tx []sdktrace.ReadOnlySpan
			for _, s := range spans.Ended() {
				switch s.Name() {
				case "process credits":
					byPlace[attr(s, "messaging.destination.partition.id")+"@"+attr(s, "messaging.kafka.offset")] = s
				case "DynamoDB.TransactWriteItems":
					tx = append(tx, s)
				}
			}
			if len(byPlace) != 2 {
				t.Fatalf("want a span per record, got %v", byPlace)
			}
			for place, want := range map[string]string{"0@15": "b7ad6b7169203331", "1@7": ""} {
				s := byPlace[place]
				if s == nil {
					t.Fatalf("no span for %s: %v", place, byPlace)
				}
				if got := s.Parent().SpanID(); want != "" && got.String() != want || want == "" && s.Parent().IsValid() {
					t.Errorf("%s: parent %v, want %q", place, s.Parent(), want)
				}
				if s.SpanKind() != trace.SpanKindConsumer || attr(s, "messaging.system") != "kafka" || attr(s, "messaging.destination.name") != "credits" ||
					attr(s, "idem.outcome") != "Processed" || attr(s, "idem.key.sha256") == "" {
					t.Errorf("%s: kind %v, attributes %v", place, s.SpanKind(), s.Attributes())
				}
			}
			b, _ := json.Marshal(byPlace["0@15"].Attributes())
			t.Logf("0@15: %s", b)
			switch {
			case tc.batch && (len(tx) != 1 || len(tx[0].Links()) != 2 || attr(tx[0], "idem.batch.message_count") != "2"):
				t.Errorf("batch mode: want one transaction span linking the 2 records' spans, got %d", len(tx))
			case !tc.batch && len(tx) != 2:
				t.Errorf("per record: want a transaction span per record, got %d", len(tx))
			}
		})
	}
}
