package routes_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/idemkit/kit/functions/internal/credit"
	"github.com/idemkit/kit/functions/webhook/internal/routes"
	"github.com/idemkit/kit/idem"
	"github.com/idemkit/kit/idem/idemtest"
	"github.com/idemkit/kit/idem/webhook"
	"github.com/idemkit/kit/idem/webhook/secrets"
)

func TestMain(m *testing.M) { idemtest.Main(m) }

const (
	genericSecret = "local-webhook-secret"
	stripeSecret  = "whsec_local_test"
)

// fn is the function's routes over fresh tables on the real local endpoint.
type fn struct {
	*idemtest.Env
	mux webhook.Mux
}

func newFn(t *testing.T, env map[string]string) *fn {
	t.Helper()
	return newFnLedger(t, env, "")
}

// newFnLedger is newFn with LEDGER_QUEUE_URL set to ledger.
func newFnLedger(t *testing.T, env map[string]string, ledger string) *fn {
	t.Helper()
	f := &fn{Env: idemtest.NewEnv(t)}
	store, err := idem.New(f.Client, f.Processed, func(o *idem.Options) {
		o.Logger = slog.New(slog.DiscardHandler)
	})
	if err != nil {
		t.Fatal(err)
	}
	f.mux, err = routes.New(context.Background(), store, secrets.Env{Getenv: func(k string) string { return env[k] }}, credit.Applier{AccountsTable: f.Accounts, LedgerQueueURL: ledger})
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func (f *fn) post(t *testing.T, path, body string, headers map[string]string) events.APIGatewayV2HTTPResponse {
	t.Helper()
	e := events.APIGatewayV2HTTPRequest{Version: "2.0", RouteKey: "POST " + path, RawPath: path, Headers: headers, Body: body}
	e.RequestContext.HTTP.Method = "POST"
	resp, err := f.mux.HandleV2(context.Background(), e)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

var stripeOnly = map[string]string{"STRIPE_WEBHOOK_SECRET": stripeSecret}

func TestCreditsFiveDeliveriesOneEffect(t *testing.T) {
	f := newFn(t, stripeOnly)
	body := `{"id": "evt_001", "account": "acc-9", "cents": 500}`
	var first events.APIGatewayV2HTTPResponse
	for i := range 5 {
		resp := f.post(t, "/webhooks/credits", body, nil)
		if resp.StatusCode != 200 {
			t.Fatalf("delivery %d: expect 200, got %d %s", i, resp.StatusCode, resp.Body)
		}
		if i == 0 {
			first = resp
			if resp.Body != `{"status":"processed","id":"evt_001"}` || resp.Headers["Idempotent-Replayed"] != "" {
				t.Fatalf("first delivery: expect the processed answer, got %v %s", resp.Headers, resp.Body)
			}
			continue
		}
		if resp.Body != first.Body || resp.Headers["Idempotent-Replayed"] != "true" || resp.Headers["Content-Type"] != first.Headers["Content-Type"] || len(resp.Headers) != len(first.Headers)+1 {
			t.Errorf("delivery %d: expect %v %s replayed, got %v %s", i, first.Headers, first.Body, resp.Headers, resp.Body)
		}
	}
	if b := f.Balance(t, "acc-9"); b != 500 {
		t.Errorf("expect a balance of 500, got %d", b)
	}
}

func TestCreditsRefusals(t *testing.T) {
	f := newFn(t, stripeOnly)
	if resp := f.post(t, "/webhooks/credits", `{"id":"evt_001","account":"acc-9","cents":500}`, nil); resp.StatusCode != 200 {
		t.Fatalf("expect 200, got %d %s", resp.StatusCode, resp.Body)
	}
	for _, tc := range []struct {
		name, body string
		headers    map[string]string
		status     int
		detail     string
	}{
		{"same key, another payload", `{"id":"evt_001","account":"acc-9","cents":900}`, nil, 422, `"evt_001"`},
		{"same header key, another payload", `{"account":"acc-1","cents":1}`, map[string]string{"idempotency-key": "evt_001"}, 422, "different payload"},
		{"missing key", `{"account":"acc-9","cents":500}`, nil, 400, "no Idempotency-Key header"},
		{"malformed JSON", `{"id":"evt_2","account":"acc-9",`, nil, 400, "not one valid JSON value"},
		{"invalid UTF-8", "{\"id\":\"evt_2\",\"account\":\"acc-\xff\",\"cents\":500}", nil, 400, "UTF-8"},
		{"trailing data", `{"id":"evt_2","account":"acc-9","cents":500} {}`, nil, 400, "after top-level value"},
		{"not an object", `["evt_2"]`, nil, 400, "not a JSON object"},
		{"zero cents", `{"id":"evt_2","account":"acc-9","cents":0}`, nil, 400, `"cents" must be positive`},
		{"negative cents", `{"id":"evt_2","account":"acc-9","cents":-5}`, nil, 400, `"cents" must be positive`},
		{"fractional cents", `{"id":"evt_2","account":"acc-9","cents":2.5}`, nil, 400, "whole number"},
		{"cents as a string", `{"id":"evt_2","account":"acc-9","cents":"500"}`, nil, 400, "whole number"},
		{"cents overflow", `{"id":"evt_2","account":"acc-9","cents":9223372036854775808}`, nil, 400, "64 bits"},
		{"empty account", `{"id":"evt_2","account":"","cents":500}`, nil, 400, `"account" is empty`},
		{"oversize", `{"id":"evt_2","account":"acc-9","cents":500,"pad":"` + strings.Repeat("x", 256<<10) + `"}`, nil, 413, "larger than"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp := f.post(t, "/webhooks/credits", tc.body, tc.headers)
			var p struct{ Detail string }
			_ = json.Unmarshal([]byte(resp.Body), &p)
			if resp.StatusCode != tc.status || resp.Headers["Content-Type"] != "application/problem+json" || !strings.Contains(p.Detail, tc.detail) {
				t.Fatalf("expect a %d problem saying %q, got %d %v %s", tc.status, tc.detail, resp.StatusCode, resp.Headers, resp.Body)
			}
		})
	}
	if n, b := f.Claims(t), f.Balance(t, "acc-9"); n != 1 || b != 500 {
		t.Errorf("expect only the first credit (1 claim, 500), got %d claim(s) and %d", n, b)
	}
}

func TestCreditsSignatureWhenSecretIsSet(t *testing.T) {
	f := newFn(t, map[string]string{"STRIPE_WEBHOOK_SECRET": stripeSecret, "WEBHOOK_SECRET": "old-secret," + genericSecret})
	body := `{"id":"evt_001","account":"acc-9","cents":500}`
	for _, tc := range []struct {
		name   string
		sig    string
		status int
	}{
		{"unsigned", "", 401},
		{"signed with another secret", idemtest.HMACSignature("not-it", []byte(body)), 401},
		{"signature of another body", idemtest.HMACSignature(genericSecret, []byte(body+" ")), 401},
		{"signed", idemtest.HMACSignature(genericSecret, []byte(body)), 200},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := map[string]string{}
			if tc.sig != "" {
				h["x-signature"] = tc.sig
			}
			if resp := f.post(t, "/webhooks/credits", body, h); resp.StatusCode != tc.status {
				t.Fatalf("expect %d, got %d %s", tc.status, resp.StatusCode, resp.Body)
			}
		})
	}
	if b := f.Balance(t, "acc-9"); b != 500 {
		t.Errorf("expect a balance of 500, got %d", b)
	}
}

func stripeEvent(id, typ, object string) string {
	return fmt.Sprintf(`{"id":%q,"object":"event","type":%q,"data":{"object":%s}}`, id, typ, object)
}

func TestStripe(t *testing.T) {
	f := newFn(t, map[string]string{"STRIPE_WEBHOOK_SECRET": "whsec_old, " + stripeSecret})
	paid := func(amount, account string) string {
		return fmt.Sprintf(`{"object":"payment_intent","amount_received":%s,"metadata":{"account":%q}}`, amount, account)
	}
	now := time.Now()
	for _, tc := range []struct {
		name, body, secret string
		at                 time.Time
		status             int
		want               string
	}{
		{"payment", stripeEvent("evt_1", "payment_intent.succeeded", paid("2500", "acc-9")), stripeSecret, now, 200, `{"status":"processed","id":"evt_1"}`},
		{"payment redelivered", stripeEvent("evt_1", "payment_intent.succeeded", paid("2500", "acc-9")), stripeSecret, now, 200, `{"status":"processed","id":"evt_1"}`},
		// Stripe renders each attempt afresh: the event, not its bytes, is
		// the payload (the Stripe preset's fingerprint).
		{"payment redelivered, rendered afresh", strings.Replace(stripeEvent("evt_1", "payment_intent.succeeded", paid("2500", "acc-9")), `"object":"event",`, `"object":"event","pending_webhooks":1,`, 1),
			stripeSecret, now, 200, `{"status":"processed","id":"evt_1"}`},
		{"old secret", stripeEvent("evt_2", "payment_intent.succeeded", paid("100", "acc-9")), "whsec_old", now, 200, `"processed"`},
		{"other type", stripeEvent("evt_3", "customer.created", `{"object":"customer","id":"cus_1"}`), stripeSecret, now, 200, `{"status":"acknowledged","id":"evt_3"}`},
		{"zero amount", stripeEvent("evt_4", "payment_intent.succeeded", paid("0", "acc-9")), stripeSecret, now, 400, "amount_received"},
		{"fractional amount", stripeEvent("evt_4", "payment_intent.succeeded", paid("2.5", "acc-9")), stripeSecret, now, 400, "amount_received"},
		{"amount overflow", stripeEvent("evt_4", "payment_intent.succeeded", paid("9223372036854775808", "acc-9")), stripeSecret, now, 400, "amount_received"},
		{"no account", stripeEvent("evt_4", "payment_intent.succeeded", paid("100", "")), stripeSecret, now, 400, "metadata.account"},
		{"no object", stripeEvent("evt_4", "payment_intent.succeeded", `"pi_1"`), stripeSecret, now, 400, "not a PaymentIntent"},
		{"stale", stripeEvent("evt_5", "payment_intent.succeeded", paid("100", "acc-9")), stripeSecret, now.Add(-6 * time.Minute), 401, "old"},
		{"from the future", stripeEvent("evt_5", "payment_intent.succeeded", paid("100", "acc-9")), stripeSecret, now.Add(6 * time.Minute), 401, "in the future"},
		{"unknown secret", stripeEvent("evt_5", "payment_intent.succeeded", paid("100", "acc-9")), "whsec_other", now, 401, "no v1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := map[string]string{"stripe-signature": idemtest.StripeSignature(tc.secret, tc.at, []byte(tc.body))}
			resp := f.post(t, "/webhooks/stripe", tc.body, h)
			if resp.StatusCode != tc.status || !strings.Contains(resp.Body, tc.want) {
				t.Fatalf("expect %d %s, got %d %s", tc.status, tc.want, resp.StatusCode, resp.Body)
			}
		})
	}
	if n, b := f.Claims(t), f.Balance(t, "acc-9"); n != 3 || b != 2600 {
		t.Errorf("expect 3 claims (two payments, one acknowledgement) and 2600, got %d and %d", n, b)
	}
}

func TestNewNeedsTheStripeSecret(t *testing.T) {
	for _, env := range []map[string]string{{}, {"WEBHOOK_SECRET": genericSecret}, {"STRIPE_WEBHOOK_SECRET": " , "}} {
		_, err := routes.New(context.Background(), nil, secrets.Env{Getenv: func(k string) string { return env[k] }}, credit.Applier{AccountsTable: "accounts"})
		if err == nil || !strings.Contains(err.Error(), "STRIPE_WEBHOOK_SECRET") {
			t.Errorf("%v: expect an error naming STRIPE_WEBHOOK_SECRET, got %v", env, err)
		}
	}
}

func TestUnknownRouteIs404(t *testing.T) {
	f := newFn(t, stripeOnly)
	resp := f.post(t, "/webhooks/other", `{}`, nil)
	var p struct{ Status int }
	if resp.StatusCode != 404 || json.Unmarshal([]byte(resp.Body), &p) != nil || p.Status != 404 {
		t.Fatalf("expect a 404 problem, got %d %s", resp.StatusCode, resp.Body)
	}
}
