package routes_test

import (
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemkit/kit/functions/internal/credit"
	"github.com/idemkit/kit/idem"
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
				items := slices.Collect(maps.Values(idemtest.OutboxItems(t, f.Client, f.Processed)))
				if len(items) != tc.want {
					t.Fatalf("expect %d outbox item(s), got %d", tc.want, len(items))
				}
				if tc.want == 0 {
					return
				}
				c := r.credit
				for name, want := range map[string]string{
					idem.OutboxDestinationAttr: queue,
					idem.OutboxTypeAttr:        credit.AppliedType,
					idem.OutboxBodyAttr:        fmt.Sprintf(`{"account":%q,"cents":%d,"id":%q}`, c.Account, c.Cents, c.ID),
					idem.OutboxIDAttr:          idem.OutboxID(r.key, 0),
				} {
					if s, _ := items[0][name].(*types.AttributeValueMemberS); s == nil || s.Value != want {
						t.Errorf("outbox item's %s: expect %q, got %v", name, want, items[0][name])
					}
				}
			})
		}
	}
}
