package handler_test

import (
	"context"
	"log/slog"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/idemkit/kit/functions/internal/credit"
	"github.com/idemkit/kit/functions/queue/internal/handler"
	"github.com/idemkit/kit/idem"
	"github.com/idemkit/kit/idem/idemtest"
)

// TestCreditAppliedOnTheLedger: with LEDGER_QUEUE_URL, a credit delivered
// twice (in one batch, and again) writes one outbox item, its
// credit.applied message; without, none.
func TestCreditAppliedOnTheLedger(t *testing.T) {
	const queue = "https://sqs.us-east-1.amazonaws.com/123456789012/LedgerQueue"
	for _, tc := range []struct {
		name, ledger string
		want         int
	}{
		{"with LEDGER_QUEUE_URL", queue, 1},
		{"without", "", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := idemtest.NewEnv(t)
			store, err := idem.New(e.Client, e.Processed, func(o *idem.Options) { o.Logger = slog.New(slog.DiscardHandler) })
			if err != nil {
				t.Fatal(err)
			}
			h, err := handler.New(store, credit.Applier{AccountsTable: e.Accounts, LedgerQueueURL: tc.ledger})
			if err != nil {
				t.Fatal(err)
			}
			rec := events.SQSMessage{MessageId: "m-1", Body: `{"id":"evt_001","account":"acc-9","cents":500}`, EventSource: "aws:sqs", EventSourceARN: "arn:aws:sqs:us-east-1:123456789012:credits"}
			dup := rec
			dup.MessageId = "m-2"
			for _, batch := range [][]events.SQSMessage{{rec, dup}, {rec}} {
				resp, err := h(context.Background(), events.SQSEvent{Records: batch})
				if err != nil || len(resp.BatchItemFailures) != 0 {
					t.Fatalf("want no failure, got %v, %v", resp.BatchItemFailures, err)
				}
			}
			if got := e.Balance(t, "acc-9"); got != 500 {
				t.Errorf("balance: expect 500, got %d", got)
			}
			sent := idemtest.Outbox(t, e.Client, e.Processed)
			if len(sent) != tc.want {
				t.Fatalf("expect %d outbox item(s), got %d", tc.want, len(sent))
			}
			if tc.want == 0 {
				return
			}
			if m := sent[0]; m.ClaimKey != "credits#evt_001" || m.Destination != queue || m.Type != credit.AppliedType || m.Body != `{"account":"acc-9","cents":500,"id":"evt_001"}` || len(m.ID) != 32 {
				t.Errorf("outbox item: expect claim credits#evt_001, %s, %s, the credit's body and a 32-digit id, got %+v", queue, credit.AppliedType, m)
			}
		})
	}
}
