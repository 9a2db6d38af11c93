package webhook_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/idemkit/kit/idem"
	"github.com/idemkit/kit/idem/idemtest"
	"github.com/idemkit/kit/idem/webhook"
)

// stripeEvent is a Stripe event as one attempt renders it, crediting cents
// to acc-9; apiVersion and pending vary between attempts of one event.
func stripeEvent(id, typ, apiVersion string, pending int) string {
	return fmt.Sprintf(`{"id":%q,"object":"event","api_version":%q,"created":1795946400,"type":%q,"livemode":false,"pending_webhooks":%d,"account":"acc-9","cents":100}`,
		id, apiVersion, typ, pending)
}

// TestFingerprintTellsRedeliveryFromReuse delivers a key twice, the second
// time with other bytes: the presets' provider identity keeps a provider's
// event rendered afresh one message (its stored answer replayed, the
// change logged at INFO with both digests); the body's digest, for
// Idempotency-Key senders, makes any change a reuse of the key (422).
func TestFingerprintTellsRedeliveryFromReuse(t *testing.T) {
	const whsec, ghSecret = "whsec_fp", "gh-secret"
	stripe := func(body string) delivery {
		return delivery{body: body, headers: map[string]string{"Stripe-Signature": idemtest.StripeSignature(whsec, time.Now(), []byte(body))}}
	}
	github := func(id, event, body string) delivery {
		return delivery{body: body, headers: map[string]string{"X-GitHub-Delivery": id, "X-GitHub-Event": event,
			"X-Hub-Signature-256": idemtest.HMACSignature(ghSecret, []byte(body))}}
	}
	ghBody := func(action string) string { return `{"action":"` + action + `","account":"acc-9","cents":100}` }
	onAccountAndCents := func(o *webhook.Options) {
		// A sender whose bodies carry a changing "sent_at": the credit is
		// what identifies the payload.
		o.Fingerprint = func(req webhook.Request) (string, error) {
			account, err := webhook.IdempotencyKey("account")(nil, req.Body)
			return "credit:" + account, err
		}
	}
	for _, tc := range []struct {
		name          string
		opt           func(*webhook.Options)
		first, second delivery
		status        int  // the second delivery's
		replayed      bool // its answer is the first's, replayed
		changed       bool // logged with payloadChanged
	}{
		{"Stripe: pending_webhooks 2, then 1", webhook.Stripe(whsec),
			stripe(stripeEvent("evt_1", "payment_intent.succeeded", "2024-06-20", 2)), stripe(stripeEvent("evt_1", "payment_intent.succeeded", "2024-06-20", 1)), 200, true, true},
		{"Stripe: the endpoint's API version changed", webhook.Stripe(whsec),
			stripe(stripeEvent("evt_1", "payment_intent.succeeded", "2024-06-20", 1)), stripe(stripeEvent("evt_1", "payment_intent.succeeded", "2025-03-31.basil", 1)), 200, true, true},
		{"Stripe: the same bytes", webhook.Stripe(whsec),
			stripe(stripeEvent("evt_1", "payment_intent.succeeded", "2024-06-20", 1)), stripe(stripeEvent("evt_1", "payment_intent.succeeded", "2024-06-20", 1)), 200, true, false},
		{"Stripe: the id reused for another type", webhook.Stripe(whsec),
			stripe(stripeEvent("evt_1", "payment_intent.succeeded", "2024-06-20", 1)), stripe(stripeEvent("evt_1", "charge.refunded", "2024-06-20", 1)), 422, false, false},
		{"GitHub: the same delivery and event, other bytes", webhook.GitHub(ghSecret),
			github("d-1", "sponsorship", ghBody("created")), github("d-1", "sponsorship", ghBody("created")+" "), 200, true, true},
		{"GitHub: the delivery id reused for another event", webhook.GitHub(ghSecret),
			github("d-1", "sponsorship", ghBody("created")), github("d-1", "issues", ghBody("opened")), 422, false, false},
		{"Idempotency-Key: another body", func(*webhook.Options) {},
			delivery{body: creditBody, headers: keyed("k-1")}, delivery{body: `{"account":"acc-9","cents":900}`, headers: keyed("k-1")}, 422, false, false},
		{"Idempotency-Key: the same body", func(*webhook.Options) {},
			delivery{body: creditBody, headers: keyed("k-1")}, delivery{body: creditBody, headers: keyed("k-1")}, 200, true, false},
		{"Idempotency-Key: a fingerprint of the sender's own", onAccountAndCents,
			delivery{body: `{"account":"acc-9","cents":100,"sent_at":1}`, headers: keyed("k-1")},
			delivery{body: `{"account":"acc-9","cents":100,"sent_at":2}`, headers: keyed("k-1")}, 200, true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			r := e.receiver(t, tc.opt)
			first := sendV2(t, r, tc.first)
			if first.status != 200 {
				t.Fatalf("first delivery: expect 200, got %d %s", first.status, first.body)
			}
			e.log.Reset()
			second := sendV2(t, r, tc.second)
			if second.status != tc.status || (second.headers["Idempotent-Replayed"] == "true") != tc.replayed {
				t.Fatalf("second delivery: expect %d (replayed %v), got %d %v %s", tc.status, tc.replayed, second.status, second.headers, second.body)
			}
			if tc.replayed && second.body != first.body {
				t.Errorf("second delivery: expect the first answer %s, got %s", first.body, second.body)
			}
			var credit struct{ Cents int64 }
			_ = json.Unmarshal([]byte(tc.first.body), &credit)
			if b := e.Balance(t, "acc-9"); b != credit.Cents {
				t.Errorf("expect the first delivery's credit once, %d, got a balance of %d", credit.Cents, b)
			}
			logged := e.logged(t)
			if len(logged) != 1 {
				t.Fatalf("second delivery: expect one log line, got %v", logged)
			}
			line := logged[0]
			wantOutcome, wantLevel := "Duplicate", "INFO"
			if tc.status == 422 {
				wantOutcome, wantLevel = "KeyReuse", "WARN"
			}
			if line["outcome"] != wantOutcome || line["level"] != wantLevel {
				t.Errorf("second delivery: expect %s at %s, got %v", wantOutcome, wantLevel, line)
			}
			if changed := line["payloadChanged"] == true; changed != tc.changed {
				t.Errorf("second delivery: expect payloadChanged %v, got %v", tc.changed, line)
			}
			if tc.changed && (line["payloadDigest"] != idem.Fingerprint([]byte(tc.second.body)) || line["storedPayloadDigest"] != idem.Fingerprint([]byte(tc.first.body))) {
				t.Errorf("second delivery: expect both bodies' digests logged, got %v", line)
			}
			counts, _ := e.counted(t)
			t.Logf("second: %d replayed=%v; logged %s at %s, payloadChanged=%v; metrics %v", second.status, tc.replayed, line["outcome"], line["level"], line["payloadChanged"], counts)
		})
	}
}

// TestFingerprintRefusals: a fingerprint that cannot be read is the
// sender's fault, a 400 counted as Refused, with nothing claimed.
func TestFingerprintRefusals(t *testing.T) {
	for _, tc := range []struct {
		name   string
		opt    func(*webhook.Options)
		body   string
		detail string
	}{
		{"Stripe type not a string", func(o *webhook.Options) { o.Key = webhook.StripeEventID; o.Fingerprint = webhook.StripeFingerprint },
			`{"id":"evt_1","type":7,"account":"acc-9","cents":100}`, `"type" field is not a string`},
		{"Stripe created not a whole number", func(o *webhook.Options) { o.Key = webhook.StripeEventID; o.Fingerprint = webhook.StripeFingerprint },
			`{"id":"evt_1","type":"x","created":1.5,"account":"acc-9","cents":100}`, `"created" field is not a whole number`},
		{"the sender's own fails", func(o *webhook.Options) {
			o.Fingerprint = func(webhook.Request) (string, error) { return "", errors.New("no order in the body") }
		}, creditBody, "no order in the body"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			r := e.receiver(t, func(o *webhook.Options) { o.Key = webhook.IdempotencyKey("id") }, tc.opt)
			a := sendV2(t, r, delivery{body: tc.body})
			if a.status != 400 {
				t.Fatalf("expect 400, got %d %s", a.status, a.body)
			}
			if d := problemDetail(t, a); !strings.Contains(d, "fingerprint") || !strings.Contains(d, tc.detail) {
				t.Errorf("expect the detail to say %q, got %q", tc.detail, d)
			}
			if counts, lines := e.counted(t); lines != 1 || counts[idem.Refused] != 1 {
				t.Errorf("expect one metric line, Refused, got %d: %v", lines, counts)
			}
			if n := e.Claims(t); n != 0 {
				t.Errorf("expect no claim, got %d", n)
			}
		})
	}
}

func TestProviderFingerprints(t *testing.T) {
	for _, tc := range []struct {
		name string
		fp   webhook.FingerprintFunc
		req  webhook.Request
		want string
	}{
		{"Stripe", webhook.StripeFingerprint, webhook.Request{Body: []byte(stripeEvent("evt_1", "payment_intent.succeeded", "2024-06-20", 3))},
			`stripe:["evt_1","payment_intent.succeeded",1795946400]`},
		{"Stripe, fields absent", webhook.StripeFingerprint, webhook.Request{Body: []byte(`{"id":"evt_1"}`)}, `stripe:["evt_1",null,null]`},
		{"Stripe, a quote in the type", webhook.StripeFingerprint, webhook.Request{Body: []byte(`{"id":"evt_1","type":"a\",\"b"}`)}, `stripe:["evt_1","a\",\"b",null]`},
		{"GitHub", webhook.GitHubFingerprint, webhook.Request{Header: webhook.Header{"x-github-delivery": "d-1", "x-github-event": "push"}}, `github:["d-1","push"]`},
		{"GitHub, no event header", webhook.GitHubFingerprint, webhook.Request{Header: webhook.Header{"x-github-delivery": "d-1"}}, `github:["d-1",""]`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got, err := tc.fp(tc.req); err != nil || got != tc.want {
				t.Fatalf("expect %s, got %s, %v", tc.want, got, err)
			}
		})
	}
}

// TestUnreadableStoredResponseCountsOnce: a Duplicate whose stored response
// this adapter cannot decode (written by another adapter sharing the
// scope) is one delivery counted once, as Failed, and a 500 that does not
// claim nothing was applied.
func TestUnreadableStoredResponseCountsOnce(t *testing.T) {
	for _, tc := range []struct {
		name   string
		stored []byte
	}{
		{"another adapter's JSON", []byte(`{"status":"processed"}`)},
		{"no response", nil},
		{"an encoding cut short", []byte{1, 0x90, 0x03}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			// The other adapter: same Store, Source and id, its own response.
			_, err := e.store.Process(context.Background(), idem.Message{ID: "k-1", Source: "webhook", Payload: []byte(creditBody)},
				func(context.Context, idem.Message) (idem.Effect, error) { return idem.Effect{Response: tc.stored}, nil })
			if err != nil {
				t.Fatal(err)
			}
			e.log.Reset()
			e.metrics.Reset()
			a := sendV2(t, e.receiver(t), delivery{body: creditBody, headers: keyed("k-1")})
			if a.status != 500 {
				t.Fatalf("expect 500, got %d %s", a.status, a.body)
			}
			if d := problemDetail(t, a); !strings.Contains(d, "processed before") || strings.Contains(d, "nothing was applied") {
				t.Errorf("expect a detail saying the key was processed before, got %q", d)
			}
			logged := e.logged(t)
			if len(logged) != 1 || logged[0]["outcome"] != "Failed" || logged[0]["level"] != "WARN" {
				t.Fatalf("expect one WARN line, Failed, got %v", logged)
			}
			counts, lines := e.counted(t)
			if lines != 1 || counts[idem.Failed] != 1 {
				t.Errorf("expect one metric line, Failed, got %d: %v", lines, counts)
			}
			t.Logf("%d %s; %d log line (%s %s: %s); %d metric line %v", a.status, a.body, len(logged), logged[0]["level"], logged[0]["outcome"], logged[0]["error"], lines, counts)
		})
	}
}

// TestClaimsStoredBeforeTheFingerprint: a claim stored while the receiver
// fingerprinted the whole body (before an upgrade that set the Stripe
// preset's fingerprint) keeps comparing by that digest: the same bytes are
// a redelivery, a retry rendered afresh is still a 422 until such claims
// are past the provider's retries.
func TestClaimsStoredBeforeTheFingerprint(t *testing.T) {
	const whsec = "whsec_fp"
	stripe := func(body string) delivery {
		return delivery{body: body, headers: map[string]string{"Stripe-Signature": idemtest.StripeSignature(whsec, time.Now(), []byte(body))}}
	}
	first := stripeEvent("evt_1", "payment_intent.succeeded", "2024-06-20", 2)
	for _, tc := range []struct {
		name   string
		retry  string
		status int
	}{
		{"the same bytes", first, 200},
		{"rendered afresh", stripeEvent("evt_1", "payment_intent.succeeded", "2024-06-20", 1), 422},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			before := e.receiver(t, webhook.Stripe(whsec), func(o *webhook.Options) { o.Fingerprint = nil })
			if a := sendV2(t, before, stripe(first)); a.status != 200 {
				t.Fatalf("first delivery: expect 200, got %d %s", a.status, a.body)
			}
			a := sendV2(t, e.receiver(t, webhook.Stripe(whsec)), stripe(tc.retry))
			if a.status != tc.status || (a.status == 200) != (a.headers["Idempotent-Replayed"] == "true") {
				t.Fatalf("retry after the upgrade: expect %d (replayed when 200), got %d %v %s", tc.status, a.status, a.headers, a.body)
			}
			if b := e.Balance(t, "acc-9"); b != 100 {
				t.Errorf("expect one credit of 100, got %d", b)
			}
		})
	}
}
