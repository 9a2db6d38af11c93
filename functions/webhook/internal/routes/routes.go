// Package routes is the reference webhook function's two routes, each
// applying a credit once:
//
//   - POST /webhooks/credits: {"id": "evt_001", "account": "acc-9",
//     "cents": 500}, keyed by the Idempotency-Key header, else the body's
//     "id"; signed with X-Signature when WEBHOOK_SECRET is configured;
//   - POST /webhooks/stripe: a Stripe event, keyed by its id; an attempt
//     Stripe rendered afresh (another pending_webhooks) is a redelivery
//     (webhook.Stripe). A payment_intent.succeeded credits data.object.metadata.account with
//     data.object.amount_received, any other type is acknowledged and
//     recorded without effect. STRIPE_WEBHOOK_SECRET is required.
//
// Both answer a first delivery with 200 {"status": …, "id": "<key>"}, and
// every redelivery with that same answer (see idem/webhook).
//
// The events under events/ are signed with WEBHOOK_SECRET=local-webhook-secret
// and STRIPE_WEBHOOK_SECRET=whsec_local_test, test secrets only.
package routes

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/idemkit/kit/functions/internal/credit"
	"github.com/idemkit/kit/idem"
	"github.com/idemkit/kit/idem/webhook"
	"github.com/idemkit/kit/idem/webhook/secrets"
)

// New returns the function's routes. Secrets are read through env from
// WEBHOOK_SECRET and STRIPE_WEBHOOK_SECRET, or their _PARAMETER and _ID
// forms; the Stripe secret is required. Each credit is applied by a
// (credit.Applier.Effect). With a.Receipts set, each credit first obtains
// a receipt (credit.Apply) under the kit's lease: a delivery whose key is
// in flight is answered 409 with Retry-After.
func New(ctx context.Context, store *idem.Store, env secrets.Env, a credit.Applier) (webhook.Mux, error) {
	generic, err := env.Load(ctx, "WEBHOOK_SECRET")
	if err != nil {
		return nil, err
	}
	stripe, err := env.Load(ctx, "STRIPE_WEBHOOK_SECRET")
	if err != nil {
		return nil, err
	}
	if len(stripe) == 0 {
		return nil, errors.New("set STRIPE_WEBHOOK_SECRET, STRIPE_WEBHOOK_SECRET_PARAMETER or STRIPE_WEBHOOK_SECRET_ID: Stripe deliveries must be verified")
	}
	credits, err := webhook.New(store, Credits(a), func(o *webhook.Options) {
		o.Source = "credits"
		o.Lease = a.Lease()
		o.Key = webhook.IdempotencyKey("id")
		if len(generic) > 0 {
			o.Verifier = &webhook.HMACVerifier{Secrets: generic}
		}
	})
	if err != nil {
		return nil, err
	}
	payments, err := webhook.New(store, Stripe(a), webhook.Stripe(stripe...), func(o *webhook.Options) { o.Lease = a.Lease() })
	if err != nil {
		return nil, err
	}
	return webhook.Mux{"POST /webhooks/credits": credits, "POST /webhooks/stripe": payments}, nil
}

// Credits applies a credit message with a. It reads the
// body with credit.Parse rather than webhook.JSONHandler: the credit's
// rules (a positive whole number of cents that fits in 64 bits, a
// non-empty account) are more than encoding/json checks, and the queue
// function applies the same ones.
func Credits(a credit.Applier) webhook.Handler {
	return func(ctx context.Context, req webhook.Request) (webhook.Response, idem.Effect, error) {
		c, err := credit.Parse(req.Body)
		if err != nil {
			return webhook.Response{}, idem.Effect{}, webhook.BadRequest(err)
		}
		eff, err := a.Effect(ctx, c)
		if err != nil {
			return webhook.Response{}, idem.Effect{}, err
		}
		return answer("processed", req.Key, eff)
	}
}

// stripeEvent is the part of a Stripe event the route reads.
type stripeEvent struct {
	Type string `json:"type"`
	Data struct {
		Object json.RawMessage `json:"object"`
	} `json:"data"`
}

// Stripe credits a payment_intent.succeeded to the account in the
// PaymentIntent's metadata with a, and acknowledges any other event.
func Stripe(a credit.Applier) webhook.Handler {
	return webhook.JSONHandler(func(ctx context.Context, evt stripeEvent, req webhook.Request) (webhook.Response, idem.Effect, error) {
		if evt.Type != "payment_intent.succeeded" {
			return answer("acknowledged", req.Key, idem.Effect{})
		}
		c, err := paymentCredit(evt.Data.Object)
		if err != nil {
			return webhook.Response{}, idem.Effect{}, webhook.BadRequest(err)
		}
		c.ID = req.Key
		eff, err := a.Effect(ctx, c)
		if err != nil {
			return webhook.Response{}, idem.Effect{}, err
		}
		return answer("processed", req.Key, eff)
	})
}

// paymentCredit reads the credit a PaymentIntent carries. Metadata is a map
// so "account" matches exactly; a struct field would also take "Account".
func paymentCredit(object json.RawMessage) (credit.Credit, error) {
	var pi struct {
		AmountReceived json.RawMessage   `json:"amount_received"`
		Metadata       map[string]string `json:"metadata"`
	}
	if err := json.Unmarshal(object, &pi); err != nil {
		return credit.Credit{}, fmt.Errorf("data.object is not a PaymentIntent: %v", err)
	}
	n, err := strconv.ParseInt(string(pi.AmountReceived), 10, 64)
	if err != nil || n <= 0 {
		return credit.Credit{}, fmt.Errorf("data.object.amount_received must be a positive whole number that fits in 64 bits, got %q", pi.AmountReceived)
	}
	account := pi.Metadata["account"]
	if account == "" {
		return credit.Credit{}, errors.New("data.object.metadata.account is missing or empty")
	}
	return credit.Credit{Account: account, Cents: n}, nil
}

// answer is 200 {"status": …, "id": "<key>"} and the effect.
func answer(status, key string, eff idem.Effect) (webhook.Response, idem.Effect, error) {
	resp, err := webhook.JSON(200, struct {
		Status string `json:"status"`
		ID     string `json:"id"`
	}{status, key})
	return resp, eff, err
}
