package routes_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/idemkit/kit/functions/internal/credit"
	"github.com/idemkit/kit/idem/idemtest"
)

// TestCreditAppliedOnTheLedger: with LEDGER_QUEUE_URL, each route's credit,
// delivered three times, writes one outbox item, its credit.applied
// message, with the same answers as without; without, none.
func TestCreditAppliedOnTheLedger(t *testing.T) {
	const queue = "https://sqs.us-east-1.amazonaws.com/123456789012/LedgerQueue"
	payment := stripeEvent("evt_2", "payment_intent.succeeded", `{"object":"payment_intent","amount_received":2500,"metadata":{"account":"acc-7"}}`)
	routes := []struct {
		path, body, answer, key string
		credit                  credit.Credit
		headers                 func() map[string]string
	}{
		{"/webhooks/credits", `{"id":"evt_1","account":"acc-9","cents":500}`, `{"status":"processed","id":"evt_1"}`, "credits#evt_1",
			credit.Credit{ID: "evt_1", Account: "acc-9", Cents: 500}, func() map[string]string { return nil }},
		{"/webhooks/stripe", payment, `{"status":"processed","id":"evt_2"}`, "stripe#evt_2",
			credit.Credit{ID: "evt_2", Account: "acc-7", Cents: 2500}, func() map[string]string {
				return map[string]string{"stripe-signature": idemtest.StripeSignature(stripeSecret, time.Now(), []byte(payment))}
			}},
	}
	for _, tc := range []struct {
		name, ledger string
		want         int
	}{
		{"with LEDGER_QUEUE_URL", queue, 1},
		{"without", "", 0},
	} {
		for _, r := range routes {
			t.Run(tc.name+r.path, func(t *testing.T) {
				f := newFnLedger(t, stripeOnly, tc.ledger)
				for i := range 3 {
					if resp := f.post(t, r.path, r.body, r.headers()); resp.StatusCode != 200 || resp.Body != r.answer {
						t.Fatalf("delivery %d: expect 200 %s, got %d %s", i, r.answer, resp.StatusCode, resp.Body)
					}
				}
				sent := idemtest.Outbox(t, f.Client, f.Processed)
				if len(sent) != tc.want {
					t.Fatalf("expect %d outbox item(s), got %d", tc.want, len(sent))
				}
				if tc.want == 0 {
					return
				}
				c := r.credit
				body := fmt.Sprintf(`{"account":%q,"cents":%d,"id":%q}`, c.Account, c.Cents, c.ID)
				if m := sent[0]; m.ClaimKey != r.key || m.Destination != queue || m.Type != credit.AppliedType || m.Body != body || len(m.ID) != 32 {
					t.Errorf("outbox item: expect claim %s, %s, %s, %s and a 32-digit id, got %+v", r.key, queue, credit.AppliedType, body, m)
				}
			})
		}
	}
}
