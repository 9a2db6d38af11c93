package main

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemkit/kit/idem"
	"github.com/idemkit/kit/idem/sqsconsumer"
)

// applyInOrder runs recs one by one through a FIFO consumer that credits
// the accounts table, and returns the cents in the order applied.
func (f *fixture) applyInOrder(t *testing.T, recs []events.SQSMessage) []int64 {
	t.Helper()
	var applied []int64
	h, err := sqsconsumer.New(f.store(time.Time{}), sqsconsumer.JSONHandler(func(_ context.Context, c creditBody, _ events.SQSMessage) (idem.Effect, error) {
		w, err := idem.Update(f.Accounts, map[string]string{"account": c.Account}, expression.Add(expression.Name("balance"), expression.Value(c.Cents)))
		applied = append(applied, c.Cents)
		return idem.Effect{Writes: []types.TransactWriteItem{w}}, err
	}))
	if err != nil {
		t.Fatal(err)
	}
	for _, rec := range recs {
		if resp, err := h(context.Background(), events.SQSEvent{Records: []events.SQSMessage{rec}}); err != nil || len(resp.BatchItemFailures) != 0 {
			t.Fatalf("consume: %v, failures %v", err, resp.BatchItemFailures)
		}
	}
	return applied
}

// TestDLQRedriveFIFOOrder: a FIFO group of three dead-lettered messages
// ("open", "deposit", "withdraw") whose first send fails past the SDK's
// retries. The run sends none of the group: the two behind the first wait
// for it, their ACTION naming it, and the run exits 1. The next run
// resumes the group from its first message; the consumer applies the
// three in their order.
func TestDLQRedriveFIFOOrder(t *testing.T) {
	f := setup(t)
	d := newDeadLetters(t, f.sqsClient(), true, "credits")
	bodies := []string{`{"account":"acc-1","cents":1}`, `{"account":"acc-1","cents":100}`, `{"account":"acc-1","cents":-30}`}
	var ids []string
	for i, b := range bodies {
		ids = append(ids, d.fail(t, "credits", b, nil, "acc-1", "evt-"+string(rune('1'+i))))
	}

	heal := f.faultSQS(t, sendFails(3))
	out, errOut, code := f.run(t, "dlq", "-queue", d.dlq, "-redrive", "--yes", "-json")
	heal()
	t.Logf("idem dlq -redrive --yes -json, the first send failing\n%s%s", out, errOut)
	if code != exitFail {
		t.Errorf("expect exit %d, got %d", exitFail, code)
	}
	contains(t, "stderr", errOut, "3 messages not sent or not deleted")
	actions := map[string]string{}
	for _, m := range classes(t, out) {
		actions[m.MessageID] = m.Action
	}
	if !strings.HasPrefix(actions[ids[0]], "not sent: ") || strings.Contains(actions[ids[0]], "waits behind") {
		t.Errorf("the first: expect its send's failure, got %q", actions[ids[0]])
	}
	for _, id := range ids[1:] {
		if a := actions[id]; !strings.HasPrefix(a, "not sent: waits behind "+ids[0]) {
			t.Errorf("%s: expect it to wait behind %s, got %q", id, ids[0], a)
		}
	}
	sent := d.received(t, "credits")
	if n := d.depth(t); n != 3 || len(sent) != 0 {
		t.Errorf("expect the group left whole in the DLQ (3) and nothing sent, got %d and %d sent", n, len(sent))
	}

	out, _ = f.mustRun(t, exitOK, "dlq", "-queue", d.dlq, "-redrive", "--yes")
	t.Logf("idem dlq -redrive --yes, again\n%s", out)
	contains(t, "the next run", out, "done: sent 3 to "+d.names["credits"]+" and deleted them")
	applied := f.applyInOrder(t, append(sent, d.received(t, "credits")...))
	if want := []int64{1, 100, -30}; !slices.Equal(applied, want) {
		t.Errorf("expect the group applied in its order %v, got %v", want, applied)
	}
	if b := f.Balance(t, "acc-1"); b != 71 {
		t.Errorf("balance: expect 71, got %d", b)
	}
}
