package traces_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	tracenoop "go.opentelemetry.io/otel/trace/noop"

	"github.com/idemkit/kit/idem"
	"github.com/idemkit/kit/idem/idemtest"
	"github.com/idemkit/kit/idem/internal/seam"
)

// TestSpans: a delivery is a span with its source, outcome, attempts and
// the key hashed, never in clear; each transaction a child span named as
// OpenTelemetry names an AWS SDK call; a cached duplicate no call's span;
// the outgoing message carries the delivery's trace context.
func TestSpans(t *testing.T) {
	tp, rec := spansOf()
	e := newEnv(t, func(o *idem.Options) { o.TracerProvider, o.CacheSize = tp, 10 })
	ctx := context.Background()
	announce := func(_ context.Context, m idem.Message) (idem.Effect, error) {
		eff, err := e.creditHandler(nil)(ctx, m)
		eff.Messages = []idem.OutgoingMessage{{Destination: ledgerQueue, Body: "b"}}
		return eff, err
	}
	msg := idem.Message{ID: "secret-customer-id", Source: "credits"}
	for range 2 {
		if _, err := e.store.Process(ctx, msg, announce); err != nil {
			t.Fatal(err)
		}
	}
	spans := rec.Ended()
	var names []string
	for _, s := range spans {
		names = append(names, s.Name())
	}
	t.Logf("spans: %s", strings.Join(names, ", "))
	if len(spans) != 3 || spans[0].Name() != "DynamoDB.TransactWriteItems" || spans[1].Name() != "process credits" || spans[2].Name() != "process credits" {
		t.Fatalf("want the transaction's span, then two deliveries', got %v", names)
	}
	tx, first, dup := spans[0], spans[1], spans[2]
	if tx.Parent().SpanID() != first.SpanContext().SpanID() || attrs(tx)["rpc.service"] != "DynamoDB" || attrs(tx)["aws.dynamodb.table_names"] == "" {
		t.Errorf("the transaction's span: want a child of the first delivery's, attributed, got %v under %v", attrs(tx), tx.Parent())
	}
	for _, c := range []struct {
		s       sdktrace.ReadOnlySpan
		outcome string
		cached  string
		sends   string
	}{{first, "Processed", "false", "1"}, {dup, "Duplicate", "true", "0"}} {
		a := attrs(c.s)
		if a["idem.outcome"] != c.outcome || a["idem.cached"] != c.cached || a["idem.attempts"] != c.sends || a["idem.source"] != "credits" || len(a["idem.key.sha256"]) != 16 {
			t.Errorf("%s: want outcome %s, cached %s, %s attempts, the source and a hashed key, got %v", c.s.Name(), c.outcome, c.cached, c.sends, a)
		}
		for k, v := range a {
			if strings.Contains(v, "secret-customer-id") {
				t.Errorf("%s: the key in clear in %s=%s", c.s.Name(), k, v)
			}
		}
	}
	out := idemtest.OutboxItems(t, e.client, e.processed)
	for _, it := range out {
		want := "00-" + first.SpanContext().TraceID().String() + "-" + first.SpanContext().SpanID().String() + "-01"
		if got := str(it, "traceparent"); got != want {
			t.Errorf("the outbox item's traceparent: want %s, got %q", want, got)
		}
	}
	if len(out) != 1 {
		t.Errorf("want 1 outbox item, got %d", len(out))
	}
}

// TestSpansNeverNameTheKey: a failed delivery and a key reuse, whose
// errors' messages quote the key, are named by their error's type; the
// key appears in no attribute and no event of any span.
func TestSpansNeverNameTheKey(t *testing.T) {
	tp, rec := spansOf()
	e := newEnv(t, func(o *idem.Options) { o.TracerProvider = tp })
	ctx := context.Background()
	const secret = "alice@example.com"
	fail := func(context.Context, idem.Message) (idem.Effect, error) {
		return idem.Effect{}, errors.New("the ledger is closed")
	}
	if _, err := e.store.Process(ctx, idem.Message{ID: secret, Source: "credits", Payload: []byte("a")}, fail); err == nil {
		t.Fatal("want the handler's error")
	}
	if _, err := e.store.Process(ctx, idem.Message{ID: secret, Source: "credits", Payload: []byte("a")}, e.creditHandler(nil)); err != nil {
		t.Fatal(err)
	}
	if _, err := e.store.Process(ctx, idem.Message{ID: secret, Source: "credits", Payload: []byte("another")}, e.creditHandler(nil)); err == nil {
		t.Fatal("want a key reuse")
	}
	types := map[string]string{}
	for _, s := range rec.Ended() {
		if s.Name() == "process credits" {
			a := attrs(s)
			types[a["idem.outcome"]] = a["error.type"]
			if (a["idem.outcome"] == "Failed" || a["idem.outcome"] == "KeyReuse") && s.Status().Code != codes.Error {
				t.Errorf("%s: status %v, want Error", a["idem.outcome"], s.Status())
			}
		}
		for k, v := range attrs(s) {
			if strings.Contains(v, secret) {
				t.Errorf("%s: the key in clear in %s=%s", s.Name(), k, v)
			}
		}
		for _, ev := range s.Events() {
			for _, kv := range ev.Attributes {
				if strings.Contains(kv.Value.String(), secret) || strings.Contains(ev.Name, secret) {
					t.Errorf("%s: the key in clear in event %s: %s=%s", s.Name(), ev.Name, kv.Key, kv.Value.String())
				}
			}
		}
		if strings.Contains(s.Status().Description, secret) {
			t.Errorf("%s: the key in clear in the status %q", s.Name(), s.Status().Description)
		}
	}
	if types["Failed"] == "" || types["KeyReuse"] != "*idem.KeyReuseError" {
		t.Errorf("want each error named by its type, got %v", types)
	}
}

// TestNestedDelivery: a delivery made inside a handler is a child of its
// outer delivery's span, named after its own Source, not after the
// adapter's name for the outer one.
func TestNestedDelivery(t *testing.T) {
	tp, rec := spansOf()
	e := newEnv(t, func(o *idem.Options) { o.TracerProvider = tp })
	ctx := seam.WithSpan(context.Background(), seam.Span{Name: "process outer-queue", Kind: trace.SpanKindConsumer})
	if _, err := e.store.Process(ctx, idem.Message{ID: "o-1", Source: "outer"}, func(ctx context.Context, _ idem.Message) (idem.Effect, error) {
		_, err := e.store.Process(ctx, idem.Message{ID: "i-1", Source: "inner"}, e.creditHandler(nil))
		return idem.Effect{}, err
	}); err != nil {
		t.Fatal(err)
	}
	byName := map[string]sdktrace.ReadOnlySpan{}
	for _, s := range rec.Ended() {
		byName[s.Name()] = s
	}
	outer, inner := byName["process outer-queue"], byName["process inner"]
	if outer == nil || inner == nil || inner.Parent().SpanID() != outer.SpanContext().SpanID() {
		t.Fatalf("want the inner delivery's span under the outer's, got %v", byName)
	}
	if attrs(outer)["idem.attempts"] != "1" || attrs(inner)["idem.attempts"] != "1" {
		t.Errorf("each delivery counts its own transaction: outer %s, inner %s", attrs(outer)["idem.attempts"], attrs(inner)["idem.attempts"])
	}
}

// TestLeaseSpans: the lease's UpdateItem is a span, and the delivery's
// carries its fencing token.
func TestLeaseSpans(t *testing.T) {
	tp, rec := spansOf()
	e := newEnv(t, func(o *idem.Options) { o.TracerProvider = tp })
	if _, err := e.store.ProcessLeased(context.Background(), idem.Message{ID: "l-1", Source: "pay"}, e.creditHandler(nil)); err != nil {
		t.Fatal(err)
	}
	var names []string
	var token string
	for _, s := range rec.Ended() {
		names = append(names, s.Name())
		if s.Name() == "process pay" {
			token = attrs(s)["idem.lease.token"]
		}
	}
	if strings.Join(names, ",") != "DynamoDB.UpdateItem,DynamoDB.TransactWriteItems,process pay" || token != "1" {
		t.Errorf("want the lease's UpdateItem, the commit and the delivery with token 1, got %v, token %q", names, token)
	}
}

// TestNoTracerProviderNoSpans: with none installed, nothing is recorded
// and the outbox item carries no trace context.
func TestNoTracerProviderNoSpans(t *testing.T) {
	e := newEnv(t)
	if _, err := e.store.Process(context.Background(), idem.Message{ID: "n-1", Source: "s"}, func(context.Context, idem.Message) (idem.Effect, error) {
		return idem.Effect{Messages: []idem.OutgoingMessage{{Destination: ledgerQueue, Body: "b"}}}, nil
	}); err != nil {
		t.Fatal(err)
	}
	for _, it := range idemtest.OutboxItems(t, e.client, e.processed) {
		if _, ok := it["traceparent"]; ok {
			t.Errorf("an untraced delivery's outbox item has a traceparent: %v", it)
		}
	}
}

// TestReadFirstSpan: the read of a claim, sent beside the handler when
// duplicates are many, is a child span of the delivery, as the transaction
// is; a read that answers while the handler runs leaves no transaction.
func TestReadFirstSpan(t *testing.T) {
	tp, rec := spansOf()
	e := newEnv(t, func(o *idem.Options) { o.TracerProvider, o.ReadFirstAbove = tp, 0.01 })
	msg := idem.Message{ID: "r-1", Source: "storm"}
	for i := range 3 { // a first delivery, a duplicate: the next reads
		h := e.creditHandler(nil)
		if i == 2 { // long enough for the read to come back first
			h = func(ctx context.Context, m idem.Message) (idem.Effect, error) {
				time.Sleep(200 * time.Millisecond)
				return e.creditHandler(nil)(ctx, m)
			}
		}
		if _, err := e.store.Process(context.Background(), msg, h); err != nil {
			t.Fatal(err)
		}
	}
	ended := rec.Ended()
	var last []string
	for _, s := range ended[len(ended)-2:] {
		last = append(last, s.Name())
	}
	if got := strings.Join(last, ","); got != "DynamoDB.GetItem,process storm" || ended[len(ended)-2].Parent().SpanID() != ended[len(ended)-1].SpanContext().SpanID() {
		t.Errorf("want the third delivery's read as its child and no transaction, got %s", got)
	}
}

// TestProviders: the rule on Options.TracerProvider. Left nil, the global
// provider traces a delivery whose context carries a recording span (an
// invoke's, as otellambda starts it), one installed after New included,
// and nothing otherwise; one set traces every delivery; a no-op one, or a
// sampler that drops the delivery, records nothing, its calls' spans
// included.
func TestProviders(t *testing.T) {
	deliver := func(t *testing.T, ctx context.Context, s *idem.Store, id string) {
		t.Helper()
		if _, err := s.Process(ctx, idem.Message{ID: id, Source: "s"}, func(context.Context, idem.Message) (idem.Effect, error) {
			return idem.Effect{}, nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	global := func(t *testing.T) (*idem.Store, *tracetest.SpanRecorder, trace.TracerProvider) {
		e := newEnv(t) // no TracerProvider: the global one
		tp, rec := spansOf()
		otel.SetTracerProvider(tp) // after New
		t.Cleanup(func() { otel.SetTracerProvider(tracenoop.NewTracerProvider()) })
		return e.store, rec, tp
	}
	t.Run("the global one, inside an invoke's span", func(t *testing.T) {
		store, rec, tp := global(t)
		ctx, invoke := tp.Tracer("otellambda").Start(context.Background(), "invoke")
		deliver(t, ctx, store, "g-1")
		invoke.End()
		if n := len(rec.Ended()); n != 3 {
			t.Errorf("%d spans, want the invoke's, the delivery's and its transaction's", n)
		}
	})
	t.Run("the global one, no span in the context", func(t *testing.T) {
		store, rec, _ := global(t)
		deliver(t, context.Background(), store, "g-2")
		if n := len(rec.Ended()) + len(rec.Started()); n != 0 {
			t.Errorf("%d spans for a delivery whose context carries none", n)
		}
	})
	t.Run("set in the options, no span in the context", func(t *testing.T) {
		tp, rec := spansOf()
		e := newEnv(t, func(o *idem.Options) { o.TracerProvider = tp })
		deliver(t, context.Background(), e.store, "o-1")
		if n := len(rec.Ended()); n != 2 {
			t.Errorf("%d spans, want the delivery's and its transaction's", n)
		}
	})
	t.Run("a no-op one", func(t *testing.T) {
		e := newEnv(t, func(o *idem.Options) { o.TracerProvider = tracenoop.NewTracerProvider() })
		deliver(t, context.Background(), e.store, "x-1") // nothing to record: it must not fail
	})
	t.Run("sampled out", func(t *testing.T) {
		rec := tracetest.NewSpanRecorder()
		tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec), sdktrace.WithSampler(sdktrace.NeverSample()))
		e := newEnv(t, func(o *idem.Options) { o.TracerProvider = tp })
		deliver(t, context.Background(), e.store, "n-1")
		if n := len(rec.Ended()) + len(rec.Started()); n != 0 {
			t.Errorf("%d spans recorded for a delivery sampled out", n)
		}
	})
}

func str(item map[string]types.AttributeValue, name string) string {
	if v, ok := item[name].(*types.AttributeValueMemberS); ok {
		return v.Value
	}
	return ""
}
