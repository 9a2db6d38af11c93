package credit_test

import (
	"context"
	"log/slog"
	"testing"

	"github.com/idemkit/kit/functions/internal/credit"
	"github.com/idemkit/kit/idem"
	"github.com/idemkit/kit/idem/idemtest"
)

// TestApplierAnnouncesOnTheLedger: with a ledger queue, a credit delivered
// three times writes one outbox item, the credit.applied message under the
// claim's outbox id; without one, none.
func TestApplierAnnouncesOnTheLedger(t *testing.T) {
	const queue = "http://127.0.0.1:9324/000000000000/LedgerQueue"
	for _, tc := range []struct {
		name, ledger string
		want         int
	}{
		{"with LEDGER_QUEUE_URL", queue, 1},
		{"without", "", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := idemtest.NewEnv(t)
			store, err := idem.New(env.Client, env.Processed, func(o *idem.Options) { o.Logger = slog.New(slog.DiscardHandler) })
			if err != nil {
				t.Fatal(err)
			}
			a := credit.Applier{AccountsTable: env.Accounts, LedgerQueueURL: tc.ledger}
			c := credit.Credit{ID: "evt_001", Account: "acc-9", Cents: 500}
			for range 3 {
				if _, err := store.Process(context.Background(), idem.Message{ID: "key-1", Source: "credits", Payload: []byte("{}")},
					func(ctx context.Context, _ idem.Message) (idem.Effect, error) { return a.Effect(ctx, c) }); err != nil {
					t.Fatal(err)
				}
			}
			if got := env.Balance(t, "acc-9"); got != 500 {
				t.Errorf("balance: expect 500, got %d", got)
			}
			sent := idemtest.Outbox(t, env.Client, env.Processed)
			if len(sent) != tc.want {
				t.Fatalf("expect %d outbox item(s), got %d: %v", tc.want, len(sent), sent)
			}
			if tc.want == 0 {
				return
			}
			// The id is the message's, the key the delivery was claimed under.
			m := sent[0]
			if m.ClaimKey != "credits#key-1" || m.Destination != queue || m.Type != "credit.applied" || m.Body != `{"account":"acc-9","cents":500,"id":"key-1"}` || len(m.ID) != 32 {
				t.Errorf("outbox item: expect claim credits#key-1, %s, credit.applied, the credit's body and a 32-digit id, got %+v", queue, m)
			}
		})
	}
}
