package idemtest_test

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/idemkit/kit/idem"
	"github.com/idemkit/kit/idem/idemtest"
	"github.com/idemkit/kit/idem/sqsconsumer"
)

// TestSQSMessagesHaveIDsOfTheirOwn: two messages built with equal bodies
// (and attributes) are two messages, each with its own messageId, as SQS
// gives each send; a redelivery by Replay keeps each one's id (the ones
// keyed by it are Duplicates).
func TestSQSMessagesHaveIDsOfTheirOwn(t *testing.T) {
	const body = `{"account":"acc-1","cents":500}`
	key := func(k string) map[string]string { return map[string]string{sqsconsumer.KeyAttribute: k} }
	for _, tc := range []struct {
		name         string
		a, b         map[string]string
		wantBalance  int64 // after both, delivered three times
		wantApplied  int
		wantReplayed int
	}{
		// Keyed by their messageIds (no IdempotencyKey): two credits.
		{"equal bodies, no attributes", nil, nil, 1000, 2, 4},
		{"equal bodies, other keys", key("evt-1"), key("evt-2"), 1000, 2, 4},
		// A producer's second send of one event: its key dedupes it.
		{"equal bodies and keys", key("evt-1"), key("evt-1"), 500, 1, 5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, b := idemtest.SQSMessage("credits", body, tc.a), idemtest.SQSMessage("credits", body, tc.b)
			if a.MessageId == b.MessageId || a.ReceiptHandle == b.ReceiptHandle {
				t.Fatalf("want two messageIds and receipt handles, got %q, %q and %q, %q", a.MessageId, b.MessageId, a.ReceiptHandle, b.ReceiptHandle)
			}
			env := idemtest.NewEnv(t)
			h, err := sqsconsumer.New(env.Store(t), creditHandler(env))
			if err != nil {
				t.Fatal(err)
			}
			for i, d := range idemtest.Replay(context.Background(), 3, h, idemtest.SQSEvent(a, b)) {
				if d.Err != nil || len(d.Response.BatchItemFailures) > 0 {
					t.Fatalf("delivery %d: want both records done, got %+v %v", i+1, d.Response, d.Err)
				}
			}
			if got := env.Balance(t, "acc-1"); got != tc.wantBalance {
				t.Errorf("balance: want %d, got %d", tc.wantBalance, got)
			}
			if p, d := env.Outcomes.Count(idem.Processed), env.Outcomes.Count(idem.Duplicate); p != tc.wantApplied || d != tc.wantReplayed {
				t.Errorf("want %d Processed and %d Duplicates, got %v", tc.wantApplied, tc.wantReplayed, env.Outcomes.All())
			}
		})
	}
}

// TestSQSMessageFailuresNameEachRecord: a batch of two messages with equal
// bodies that both fail reports two records, one ItemIdentifier each.
func TestSQSMessageFailuresNameEachRecord(t *testing.T) {
	env := idemtest.NewEnv(t)
	h, err := sqsconsumer.New(env.Store(t), func(context.Context, events.SQSMessage) (idem.Effect, error) {
		return idem.Effect{}, errors.New("down")
	})
	if err != nil {
		t.Fatal(err)
	}
	a, b := idemtest.SQSMessage("credits", `{"cents":1}`, nil), idemtest.SQSMessage("credits", `{"cents":1}`, nil)
	resp, err := h(context.Background(), idemtest.SQSEvent(a, b))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range resp.BatchItemFailures {
		got = append(got, f.ItemIdentifier)
	}
	if want := []string{a.MessageId, b.MessageId}; len(got) != 2 || got[0] == got[1] || !slices.Equal(got, want) {
		t.Errorf("batchItemFailures: want %q, two ids, got %q", want, got)
	}
}
