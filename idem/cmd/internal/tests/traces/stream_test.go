package traces_test

import (
	"context"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/idemkit/kit/idem"
	"github.com/idemkit/kit/idem/idemtest"
	"github.com/idemkit/kit/idem/stream"
)

// TestClaimedSpans: a claimed stream record's span is named after its
// table, a datasource trigger as OpenTelemetry's FaaS conventions say.
func TestClaimedSpans(t *testing.T) {
	env := idemtest.NewEnv(t)
	spans := tracetest.NewSpanRecorder()
	store := env.Store(t, func(o *idem.Options) {
		o.TracerProvider = sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))
	})
	claimed, err := stream.Claimed(store, func(context.Context, events.DynamoDBEventRecord) (idem.Effect, error) { return idem.Effect{}, nil })
	if err != nil {
		t.Fatal(err)
	}
	rec := idemtest.StreamRecord("orders", "100", nil, map[string]events.DynamoDBAttributeValue{"id": events.NewStringAttribute("o-1")})
	if err := claimed(context.Background(), rec); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, s := range spans.Ended() {
		got = append(got, s.Name())
		if s.Name() == "process orders" {
			a := map[string]string{}
			for _, kv := range s.Attributes() {
				a[string(kv.Key)] = kv.Value.String()
			}
			if a["faas.trigger"] != "datasource" || a["faas.document.collection"] != "orders" || a["faas.document.operation"] != "insert" || a["idem.outcome"] != "Processed" {
				t.Errorf("attributes %v", a)
			}
			return
		}
	}
	t.Errorf("no span \"process orders\" among %v", got)
}
