package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/idemkit/kit/idem"
	"github.com/idemkit/kit/idem/idemtest"
	"github.com/idemkit/kit/idem/internal/tracectx"
	"github.com/idemkit/kit/idem/internal/wire"
	"github.com/idemkit/kit/idem/sqsconsumer"
	"github.com/idemkit/kit/idem/webhook"
)

const ledgerURL = "https://sqs.us-east-1.amazonaws.com/123456789012/ledger"

// credit is an SQS consumer's effect: an answer and two outgoing
// messages, through the outbox.
func credit(_ context.Context, rec events.SQSMessage) (idem.Effect, error) {
	return idem.Effect{Response: []byte("credited " + rec.Body), Messages: []idem.OutgoingMessage{
		{Destination: ledgerURL, Type: "credit.applied", Body: rec.Body},
		{Destination: ledgerURL, Type: "credit.audited", Body: rec.Body, Attributes: map[string]string{"Team": "payments"}},
	}}, nil
}

// consume runs recs through a real sqsconsumer handler on store.
func consume(t *testing.T, store *idem.Store, recs ...events.SQSMessage) {
	t.Helper()
	h, err := sqsconsumer.New(store, credit)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := h(context.Background(), idemtest.SQSEvent(recs...))
	if err != nil || len(resp.BatchItemFailures) != 0 {
		t.Fatalf("consume: %v, failures %v", err, resp.BatchItemFailures)
	}
}

// TestInspect: claims made by the adapters themselves (sqsconsumer's
// standard and FIFO keys, a webhook Mux route, the Stripe preset, leases,
// an expired claim), each found by the flags that name its message as its
// sender knows it, and shown decoded with the outbox messages it sent.
func TestInspect(t *testing.T) {
	f := setup(t)
	ctx := context.Background()
	now := time.Now()
	store := f.store(time.Time{})

	consume(t, store, idemtest.SQSMessage("credits", `{"cents":500}`, map[string]string{"IdempotencyKey": "evt_1"}))
	consume(t, store, idemtest.FIFO(idemtest.SQSMessage("credits.fifo", `{"cents":700}`, nil), "acc-9", "d-1"))

	charge := func(_ context.Context, req webhook.Request) (webhook.Response, idem.Effect, error) {
		resp, err := webhook.JSON(201, map[string]string{"charge": req.Key})
		return resp, idem.Effect{}, err
	}
	r, err := webhook.New(store, charge)
	if err != nil {
		t.Fatal(err)
	}
	mux := webhook.Mux{"POST /charges": r}
	if resp, _ := mux.HandleV2(ctx, idemtest.HTTPRequest("POST", "/charges", `{"amount":5}`, map[string]string{"Idempotency-Key": `"K-1"`})); resp.StatusCode != 201 {
		t.Fatalf("webhook: %d %s", resp.StatusCode, resp.Body)
	}
	const secret = "whsec_test"
	stripe, err := webhook.New(store, charge, webhook.Stripe(secret))
	if err != nil {
		t.Fatal(err)
	}
	event := `{"id":"evt_s1","type":"payment_intent.succeeded","created":1767225600,"data":{}}`
	if resp, _ := stripe.HandleV2(ctx, idemtest.HTTPRequest("POST", "/stripe", event, map[string]string{"Stripe-Signature": idemtest.StripeSignature(secret, now, []byte(event))})); resp.StatusCode != 201 {
		t.Fatalf("stripe: %d %s", resp.StatusCode, resp.Body)
	}

	// A lease held while the test inspects it, and one released by a
	// failed handler.
	release := holdLease(ctx, store, "payouts", "lease-1")
	defer func() {
		if err := release(); err != nil {
			t.Errorf("the held lease's delivery: %v", err)
		}
	}()
	if _, err := store.ProcessLeased(ctx, idem.Message{ID: "lease-2", Source: "payouts", Payload: []byte("p")}, func(context.Context, idem.Message) (idem.Effect, error) {
		return idem.Effect{}, errors.New("the payment API timed out")
	}); err == nil {
		t.Fatal("expect the failed handler's error")
	}
	// Claimed 40 days ago with a 30-day retention: expired, not yet deleted.
	if _, err := f.store(now.Add(-40*24*time.Hour)).Process(ctx, idem.Message{ID: "old-1", Source: "credits", Payload: []byte("x")},
		func(context.Context, idem.Message) (idem.Effect, error) { return idem.Effect{}, nil }); err != nil {
		t.Fatal(err)
	}

	// Traced: the claim names the delivery's trace.
	spans := tracetest.NewSpanRecorder()
	traced := f.store(time.Time{}, func(o *idem.Options) {
		o.TracerProvider = sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))
	})
	if _, err := traced.Process(ctx, idem.Message{ID: "traced-1", Source: "credits", Payload: []byte("x")},
		func(context.Context, idem.Message) (idem.Effect, error) { return idem.Effect{}, nil }); err != nil {
		t.Fatal(err)
	}
	var traceID string
	for _, sp := range spans.Ended() {
		traceID = sp.SpanContext().TraceID().String()
	}

	sent := map[string][]string{} // claim key → its outbox ids, as the relay would read them
	for _, m := range idemtest.Outbox(t, f.Client, f.Processed) {
		sent[m.ClaimKey] = append(sent[m.ClaimKey], m.ID)
	}

	for _, tc := range []struct {
		name string
		args []string
		want []string
	}{
		{"sqsconsumer: IdempotencyKey attribute", []string{"-queue", "credits", "-message-attribute", "IdempotencyKey=evt_1"},
			[]string{"credits#evt_1", "Processed", `credited {"cents":500}`, "2 messages sent", sent["credits#evt_1"][0], sent["credits#evt_1"][1], "type credit.audited", "Team=payments"}},
		{"sqsconsumer: queue URL and -id", []string{"-queue", "https://sqs.us-east-1.amazonaws.com/123456789012/credits", "-id", "evt_1"},
			[]string{"credits#evt_1", "Processed"}},
		{"sqsconsumer: FIFO group and deduplication id", []string{"-queue", "arn:aws:sqs:us-east-1:123456789012:credits.fifo", "-group", "acc-9", "-dedup", "d-1"},
			[]string{"credits.fifo#acc-9/d-1", "Processed", sent["credits.fifo#acc-9/d-1"][0]}},
		{"webhook: a Mux route", []string{"-route", "POST /charges", "-idempotency-key", "K-1"},
			[]string{"POST /charges#K-1", "webhook response 201 (Content-Type: application/json)", `body (text) {"charge":"K-1"}`, "outbox", "none"}},
		{"webhook: the Stripe preset", []string{"-stripe", "evt_s1"},
			[]string{"stripe#evt_s1", "source", "stripe", "payload sha256", idem.Fingerprint([]byte(event)), "the sender's identity", "webhook response 201"}},
		{"lease: live", []string{"-source", "payouts", "-id", "lease-1"},
			[]string{"payouts#lease-1", "Pending", "live until", "fence token 1", "none yet: a pending claim"}},
		{"lease: released", []string{"-source", "payouts", "-id", "lease-2"},
			[]string{"Pending", "released: the handler failed"}},
		{"expired", []string{"-source", "credits", "-id", "old-1"},
			[]string{"credits#old-1", "expired, the kit takes the claim as absent", "older than the outbox's default retention"}},
		{"raw key", []string{"-key", "credits#evt_1"}, []string{"Processed", "key sha256", tracectx.KeyHash("credits#evt_1")}},
		{"traced", []string{"-source", "credits", "-id", "traced-1"},
			[]string{"trace", traceID, "the delivery that made the claim", "idem.key.sha256=" + tracectx.KeyHash("credits#traced-1")}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, _ := f.mustRun(t, exitOK, append([]string{"inspect"}, tc.args...)...)
			contains(t, "inspect", out, tc.want...)
			t.Logf("idem inspect %s\n%s", strings.Join(tc.args, " "), out)
		})
	}

	t.Run("json", func(t *testing.T) {
		out, _ := f.mustRun(t, exitOK, "inspect", "-queue", "credits", "-message-attribute", "IdempotencyKey=evt_1", "-json")
		var v claimView
		if err := json.Unmarshal([]byte(out), &v); err != nil {
			t.Fatalf("%v in %s", err, out)
		}
		if v.Key != "credits#evt_1" || v.Outcome != "Processed" || v.Expired || v.Answer == nil || v.Answer.Text == nil || len(v.Outbox) != 2 {
			t.Fatalf("got %+v", v)
		}
		// The ids the command derived are those the Store wrote.
		for i, m := range v.Outbox {
			if want := wire.ID(f.Processed, v.Key, v.ClaimedAt, i); m.ID != want || m.ID != sent[v.Key][i] {
				t.Errorf("outbox #%d: id %s, want %s", i, m.ID, want)
			}
		}
		t.Logf("idem inspect ... -json\n%s", out)
		out, _ = f.mustRun(t, exitOK, "inspect", "-route", "POST /charges", "-idempotency-key", "K-1", "-json")
		if err := json.Unmarshal([]byte(out), &v); err != nil || v.Answer.Webhook == nil || v.Answer.Webhook.Status != 201 || v.Answer.Webhook.Body != `{"charge":"K-1"}` {
			t.Fatalf("webhook answer: %v %s", err, out)
		}
	})

	t.Run("missing", func(t *testing.T) {
		out, errOut := f.mustRun(t, exitFail, "inspect", "-source", "credits", "-id", "evt_404")
		contains(t, "stderr", errOut, `no claim under "credits#evt_404"`, "check -prefix, -scope and the Source")
		if out != "" {
			t.Errorf("expect nothing on stdout, got %s", out)
		}
	})

	t.Run("an outbox item's key", func(t *testing.T) {
		key := fmt.Sprintf("#outbox#%s", sent["credits#evt_1"][0])
		_, errOut := f.mustRun(t, exitFail, "inspect", "-key", key)
		contains(t, "stderr", errOut, "outbox item, not a claim")
	})
}
