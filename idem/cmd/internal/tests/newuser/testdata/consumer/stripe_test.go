package consumer_test

import (
	"context"
	"testing"
	"time"

	"github.com/idemkit/kit/idem"
	"github.com/idemkit/kit/idem/idemtest"
	"github.com/idemkit/kit/idem/webhook"
)

func TestStripePaymentOnce(t *testing.T) {
	env := idemtest.NewEnv(t)
	type payment struct {
		Data struct {
			Object struct {
				AmountReceived int64 `json:"amount_received"`
				Metadata       map[string]string
			}
		}
	}
	r, err := webhook.New(env.Store(t), webhook.JSONHandler(func(_ context.Context, p payment, _ webhook.Request) (webhook.Response, idem.Effect, error) {
		eff, err := credit(env, p.Data.Object.Metadata["account"], p.Data.Object.AmountReceived)
		return webhook.Response{Body: []byte("ok")}, eff, err
	}), webhook.Stripe("whsec_test"))
	if err != nil {
		t.Fatal(err)
	}
	body := `{"id":"evt_1","type":"payment_intent.succeeded","created":1767225600,"data":{"object":{"amount_received":500,"metadata":{"account":"acc-1"}}}}`
	req := idemtest.HTTPRequest("POST", "/stripe", body, map[string]string{"Stripe-Signature": idemtest.StripeSignature("whsec_test", time.Now(), []byte(body))})
	last := idemtest.Replay(context.Background(), 3, r.HandleV2, req)[2].Response
	if last.StatusCode != 200 || last.Body != "ok" || env.Balance(t, "acc-1") != 500 || env.Outcomes.Count(idem.Duplicate) != 2 {
		t.Fatalf("want one credit of 500 and the answer replayed, got %d %q, %d and %v", last.StatusCode, last.Body, env.Balance(t, "acc-1"), env.Outcomes.All())
	}
}
