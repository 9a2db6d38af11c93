package traces_test

import (
	"context"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/idemkit/kit/idem"
	"github.com/idemkit/kit/idem/sqsconsumer"
)

// TestSpans: a record's delivery span is named and attributed as
// OpenTelemetry's messaging conventions name an SQS message's processing,
// continuing the trace its AWSTraceHeader (which the kit's relay sets) or
// its traceparent attribute carries; in batch mode the batch's
// transaction links every record's span.
func TestSQSSpans(t *testing.T) {
	const (
		xray        = "Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1"
		traceparent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
	)
	fromRelay := record("m-xray", `{"account":"acc-1","cents":1}`)
	fromRelay.Attributes = map[string]string{"AWSTraceHeader": xray}
	fromW3C := record("m-w3c", `{"account":"acc-2","cents":1}`, "traceparent", traceparent)
	plain := record("m-plain", `{"account":"acc-3","cents":1}`)

	for _, tc := range []struct {
		name  string
		batch bool
	}{{"per record", false}, {"batch transactions", true}} {
		t.Run(tc.name, func(t *testing.T) {
			spans := tracetest.NewSpanRecorder()
			e := newEnv(t, func(o *idem.Options) {
				o.TracerProvider = sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))
			})
			h := newHandler(t, e.store, func(_ context.Context, rec events.SQSMessage) (idem.Effect, error) { return e.handler(rec) },
				func(o *sqsconsumer.Options) { o.BatchTransactions = tc.batch })
			if resp, err := h(context.Background(), events.SQSEvent{Records: []events.SQSMessage{fromRelay, fromW3C, plain}}); err != nil || len(resp.BatchItemFailures) > 0 {
				t.Fatalf("%v %v", resp, err)
			}
			byID := map[string]sdktrace.ReadOnlySpan{}
			var tx []sdktrace.ReadOnlySpan
			for _, s := range spans.Ended() {
				switch s.Name() {
				case "process credits":
					byID[attr(s, "messaging.message.id")] = s
				case "DynamoDB.TransactWriteItems":
					tx = append(tx, s)
				}
			}
			if len(byID) != 3 {
				t.Fatalf("want a span per record, got %v", byID)
			}
			for id, want := range map[string]string{"m-xray": "53995c3f42cd8ad8", "m-w3c": "b7ad6b7169203331", "m-plain": ""} {
				s := byID[id]
				if got := s.Parent().SpanID(); want != "" && got.String() != want || want == "" && s.Parent().IsValid() {
					t.Errorf("%s: parent %v, want %q", id, s.Parent(), want)
				}
				if s.SpanKind() != trace.SpanKindConsumer || attr(s, "messaging.system") != "aws_sqs" || attr(s, "messaging.destination.name") != "credits" ||
					attr(s, "idem.outcome") != "Processed" || attr(s, "idem.key.sha256") == "" {
					t.Errorf("%s: kind %v, attributes %v", id, s.SpanKind(), s.Attributes())
				}
			}
			switch {
			case tc.batch && (len(tx) != 1 || len(tx[0].Links()) != 3 || attr(tx[0], "idem.batch.message_count") != "3"):
				t.Errorf("batch mode: want one transaction span linking the 3 records' spans, got %d", len(tx))
			case !tc.batch && len(tx) != 3:
				t.Errorf("per record: want a transaction span per record, got %d", len(tx))
			}
		})
	}
}

func attr(s sdktrace.ReadOnlySpan, key string) string {
	for _, kv := range s.Attributes() {
		if string(kv.Key) == key {
			return kv.Value.String()
		}
	}
	return ""
}
