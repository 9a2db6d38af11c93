package traces_test

import (
	"context"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/idemkit/kit/idem"
	"github.com/idemkit/kit/idem/idemtest"
	"github.com/idemkit/kit/idem/webhook"
)

// TestSpans: a webhook delivery's span is named as OpenTelemetry's HTTP
// server conventions name it, a child of the caller's traceparent when it
// sends one; a retry's span is a Duplicate's.
func TestWebhookSpans(t *testing.T) {
	e := newEnv(t)
	spans := tracetest.NewSpanRecorder()
	e.store = e.newStore(t, func(o *idem.Options) {
		o.TracerProvider = sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))
	})
	mux := webhook.Mux{"POST /webhooks/credits": e.receiver(t)}
	send := func(headers map[string]string) {
		t.Helper()
		resp, err := mux.HandleV2(context.Background(), idemtest.HTTPRequest("POST", "/webhooks/credits", `{"account":"acc-1","cents":5}`, headers))
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("%d %v", resp.StatusCode, err)
		}
	}
	send(map[string]string{"Idempotency-Key": "k-1", "traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"})
	send(map[string]string{"Idempotency-Key": "k-1"})

	var deliveries []sdktrace.ReadOnlySpan
	for _, s := range spans.Ended() {
		if s.Name() == "POST /webhooks/credits" {
			deliveries = append(deliveries, s)
		}
	}
	if len(deliveries) != 2 {
		t.Fatalf("want a span per delivery, got %d of %d", len(deliveries), len(spans.Ended()))
	}
	first, retry := deliveries[0], deliveries[1]
	for _, c := range []struct {
		what      string
		span      sdktrace.ReadOnlySpan
		outcome   string
		parentHex string
	}{{"first", first, "Processed", "b7ad6b7169203331"}, {"retry", retry, "Duplicate", ""}} {
		a := map[string]string{}
		for _, kv := range c.span.Attributes() {
			a[string(kv.Key)] = kv.Value.String()
		}
		if c.span.SpanKind() != trace.SpanKindServer || a["http.request.method"] != "POST" || a["http.route"] != "/webhooks/credits" || a["url.path"] != "/webhooks/credits" || a["idem.outcome"] != c.outcome {
			t.Errorf("%s: kind %v, attributes %v", c.what, c.span.SpanKind(), a)
		}
		if got := c.span.Parent(); c.parentHex != "" && (got.SpanID().String() != c.parentHex || got.TraceID().String() != "0af7651916cd43dd8448eb211c80319c") ||
			c.parentHex == "" && got.IsValid() {
			t.Errorf("%s: parent %v, want %q", c.what, got, c.parentHex)
		}
	}
}
