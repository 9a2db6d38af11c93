package chaos_test

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/idemkit/kit/idem/cmd/internal/testphase"
	"github.com/idemkit/kit/idem/idemtest"
)

// TestStripeRetryRenderedAfresh delivers one Stripe event twice to the
// real functions/webhook bootstrap under the emulator, as Stripe retries
// it: each attempt rendered afresh, pending_webhooks 2 then 1, each
// correctly signed. The retry is the same event: the first answer
// replayed, with Idempotent-Replayed: true, the credit applied once, and
// the changed bytes logged at INFO, not a 422.
func TestStripeRetryRenderedAfresh(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the functions and runs them under the emulator")
	}
	phase := testphase.Start(t, "Stripe retry", "one Stripe event delivered twice, rendered afresh, to two environments of the webhook function")
	bin := buildFunctions(t, phase)
	tb := newTables(t)
	// The retry reaches another execution environment, a cold one, as
	// Stripe's retry may: its answer comes from the stored claim, not from
	// the first environment's cache.
	fn := bin.function(t, "webhook", idemtest.Endpoint(t), tb)
	cold := bin.function(t, "webhook", idemtest.Endpoint(t), tb)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	var got []events.APIGatewayV2HTTPResponse
	for i, pending := range []int{2, 1} {
		fn := []*function{fn, cold}[i]
		out, err := fn.Invoke(ctx, stripeAttempt(pending, time.Now()))
		if err != nil {
			t.Fatalf("pending_webhooks %d: %v\n%s", pending, err, fn.out.String())
		}
		var resp events.APIGatewayV2HTTPResponse
		if err := json.Unmarshal(out, &resp); err != nil {
			t.Fatalf("pending_webhooks %d: not an HTTP API response: %s", pending, out)
		}
		t.Logf("pending_webhooks %d: %d %v %s", pending, resp.StatusCode, resp.Headers, resp.Body)
		got = append(got, resp)
	}
	first, retry := got[0], got[1]
	if first.StatusCode != 200 || first.Body != `{"status":"processed","id":"evt_chaos_stripe_1"}` || first.Headers["Idempotent-Replayed"] != "" {
		t.Fatalf("first attempt: want 200 processed, not replayed, got %d %v %s", first.StatusCode, first.Headers, first.Body)
	}
	want := maps.Clone(first.Headers)
	want["Idempotent-Replayed"] = "true"
	if retry.StatusCode != first.StatusCode || retry.Body != first.Body || !maps.Equal(retry.Headers, want) {
		t.Errorf("retry: want the first answer replayed, %d %v %s, got %d %v %s", first.StatusCode, want, first.Body, retry.StatusCode, retry.Headers, retry.Body)
	}
	if got := tb.scan(t, tb.accounts, "account", "balance"); fmt.Sprint(got) != fmt.Sprint(map[string]int{"acc-stripe": 2500}) {
		t.Errorf("balances: want acc-stripe credited 2500 once, got %v", got)
	}
	if n := len(tb.scan(t, tb.processed, "pk", "expiresAt")); n != 1 {
		t.Errorf("claims: want 1, got %d", n)
	}

	// The function's own output: one metric per attempt, and the retry
	// logged at INFO with both payload digests.
	for _, f := range []*function{fn, cold} {
		f.waitLines(t, func(lines []map[string]any) bool { return total(countOutcomes(lines)) >= 1 })
	}
	output := fn.out.String() + cold.out.String()
	if strings.Contains(output, `"cached":true`) {
		t.Errorf("the retry was answered from a cache; want the stored claim read")
	}
	metrics := map[string]int{}
	var changed []string
	for line := range strings.Lines(output) {
		if strings.Contains(line, `"CloudWatchMetrics"`) {
			for _, oc := range allOutcomes {
				if strings.Contains(line, `"`+string(oc)+`":1`) {
					metrics[string(oc)]++
				}
			}
		}
		if strings.Contains(line, `"payloadChanged":true`) {
			changed = append(changed, strings.TrimSpace(line))
		}
	}
	if fmt.Sprint(metrics) != fmt.Sprint(map[string]int{"Duplicate": 1, "Processed": 1}) {
		t.Errorf("metrics: want one Processed and one Duplicate, got %v", metrics)
	}
	// Lambda's JSON log lines (LogFormat JSON), with the invoke's requestId.
	if len(changed) != 1 || !strings.Contains(changed[0], `"level":"INFO","message":"idem: Duplicate"`) || !strings.Contains(changed[0], `"requestId":`) ||
		!strings.Contains(changed[0], `"payloadDigest":`) || !strings.Contains(changed[0], `"storedPayloadDigest":`) {
		t.Errorf("log: want the retry logged once at INFO as a Duplicate with both digests and the requestId, got %q", changed)
	}
	t.Logf("metrics %v; log: %s", metrics, strings.Join(changed, "\n"))
	phase.End("answers %d and %d, the second replayed: %d Processed, %d Duplicate", first.StatusCode, retry.StatusCode, metrics["Processed"], metrics["Duplicate"])
}

// stripeAttempt is one attempt at delivering a payment_intent.succeeded,
// as Stripe renders it with pending endpoints still waiting, signed at
// now with the function's secret (see binaries.function).
func stripeAttempt(pending int, now time.Time) []byte {
	body := fmt.Sprintf(`{"id":"evt_chaos_stripe_1","object":"event","api_version":"2024-06-20","created":1795946400,`+
		`"type":"payment_intent.succeeded","livemode":false,"pending_webhooks":%d,"request":{"id":null,"idempotency_key":null},`+
		`"data":{"object":{"id":"pi_chaos_1","object":"payment_intent","amount":2500,"amount_received":2500,"currency":"usd",`+
		`"status":"succeeded","metadata":{"account":"acc-stripe"}}}}`, pending)
	ev := events.APIGatewayV2HTTPRequest{Version: "2.0", RouteKey: "POST /webhooks/stripe", RawPath: "/webhooks/stripe",
		Headers: map[string]string{"content-type": "application/json", "user-agent": "Stripe/1.0 (+https://stripe.com/docs/webhooks)",
			"stripe-signature": idemtest.StripeSignature("whsec_chaos", now, []byte(body))},
		Body: body}
	ev.RequestContext.HTTP.Method = "POST"
	b, _ := json.Marshal(ev)
	return b
}
