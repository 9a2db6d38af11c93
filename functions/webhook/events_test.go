package main

import (
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
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

// The local test secrets the events are signed with (see internal/routes).
var testEnv = map[string]string{"WEBHOOK_SECRET": "local-webhook-secret", "STRIPE_WEBHOOK_SECRET": "whsec_local_test"}

func readEvent(t *testing.T, name string) []byte {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("..", "..", "events", name))
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

// TestEventsRoundTrip decodes each event into aws-lambda-go's type,
// refusing fields the type does not have, and expects every member of the
// file back, equal, when the value is encoded again.
func TestEventsRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		file  string
		event any
	}{
		{"apigw-credits.json", &events.APIGatewayV2HTTPRequest{}},
		{"apigw-credits-v1.json", &events.APIGatewayProxyRequest{}},
		{"apigw-stripe.json", &events.APIGatewayV2HTTPRequest{}},
	} {
		t.Run(tc.file, func(t *testing.T) {
			idemtest.CheckJSONRoundTrip(t, readEvent(t, tc.file), tc.event)
		})
	}
}

func TestStripeEventIsSignedWithTheTestSecret(t *testing.T) {
	var e events.APIGatewayV2HTTPRequest
	if err := json.Unmarshal(readEvent(t, "apigw-stripe.json"), &e); err != nil {
		t.Fatal(err)
	}
	sig := webhook.Header(e.Headers).Get("Stripe-Signature")
	ts, _, _ := strings.Cut(strings.TrimPrefix(sig, "t="), ",")
	at, err := strconv.ParseInt(ts, 10, 64)
	if err != nil {
		t.Fatalf("Stripe-Signature %q has no timestamp", sig)
	}
	v := &webhook.StripeVerifier{Secrets: []string{testEnv["STRIPE_WEBHOOK_SECRET"]}, Now: func() time.Time { return time.Unix(at, 0) }}
	if err := v.Verify(e.Headers, []byte(e.Body)); err != nil {
		t.Fatalf("expect a valid signature at its own time, got %v", err)
	}
}

// TestEventsInvokeTheFunction sends each event through the function's
// routes, as `sam local invoke -e` would, the Stripe one signed again now.
func TestEventsInvokeTheFunction(t *testing.T) {
	e := idemtest.NewEnv(t)
	store, err := idem.New(e.Client, e.Processed, func(o *idem.Options) { o.Logger = slog.New(slog.DiscardHandler) })
	if err != nil {
		t.Fatal(err)
	}
	mux, err := routes.New(context.Background(), store, secrets.Env{Getenv: func(k string) string { return testEnv[k] }}, credit.Applier{AccountsTable: e.Accounts})
	if err != nil {
		t.Fatal(err)
	}
	var stripe map[string]any
	if err := json.Unmarshal(readEvent(t, "apigw-stripe.json"), &stripe); err != nil {
		t.Fatal(err)
	}
	stripe["headers"].(map[string]any)["stripe-signature"] = idemtest.StripeSignature(testEnv["STRIPE_WEBHOOK_SECRET"], time.Now(), []byte(stripe["body"].(string)))
	resigned, _ := json.Marshal(stripe)

	for _, tc := range []struct {
		name     string
		event    []byte
		body     string
		replayed string
	}{
		{"v2 credit", readEvent(t, "apigw-credits.json"), `{"status":"processed","id":"evt_001"}`, ""},
		// The same key and body through the REST API: the same payload, replayed.
		{"v1 credit", readEvent(t, "apigw-credits-v1.json"), `{"status":"processed","id":"evt_001"}`, "true"},
		{"stripe payment", resigned, `{"status":"processed","id":"evt_3QF1xZ2eZvKYlo2C0Aqbx1Jm"}`, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := mux.Handle(context.Background(), json.RawMessage(tc.event))
			if err != nil {
				t.Fatal(err)
			}
			var status int
			var headers map[string]string
			var body string
			switch r := out.(type) {
			case events.APIGatewayV2HTTPResponse:
				status, headers, body = r.StatusCode, r.Headers, r.Body
			case events.APIGatewayProxyResponse:
				status, headers, body = r.StatusCode, r.Headers, r.Body
			}
			if status != 200 || body != tc.body || headers["Idempotent-Replayed"] != tc.replayed {
				t.Fatalf("expect 200 %s (replayed %q), got %d %v %s", tc.body, tc.replayed, status, headers, body)
			}
		})
	}
	if b := e.Balance(t, "acc-9"); b != 3000 {
		t.Errorf("expect a balance of 3000 (500 once, 2500), got %d", b)
	}
}
