package sqsconsumer_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemkit/kit/idem"
	"github.com/idemkit/kit/idem/sqsconsumer"
)

func batchMode(o *sqsconsumer.Options) { o.BatchTransactions = true }

func credits(prefix string, n int, account func(i int) string) []events.SQSMessage {
	out := make([]events.SQSMessage, n)
	for i := range out {
		out[i] = record(fmt.Sprint(prefix, i), fmt.Sprintf(`{"account":%q,"cents":%d}`, account(i), 1<<i))
	}
	return out
}

// TestBatchTransactions runs batches one after another in batch mode and
// checks the records reported failed, the outcomes counted, the
// TransactWriteItems calls per batch and the balances at the end.
func TestBatchTransactions(t *testing.T) {
	own := func(i int) string { return fmt.Sprint("acc-", i) }
	ten := credits("m", 10, own)
	type delivery struct {
		batch  []events.SQSMessage
		failed []string
		want   map[idem.Outcome]int
		calls  int
	}
	for _, tc := range []struct {
		name       string
		deliveries []delivery
		balances   map[string]int
	}{
		{"ten new records, then redelivered: one call each", []delivery{
			{ten, nil, map[idem.Outcome]int{idem.Processed: 10}, 1},
			{ten, nil, map[idem.Outcome]int{idem.Duplicate: 10}, 1},
		}, map[string]int{"acc-0": 1, "acc-9": 512}},
		{"half redelivered: two calls", []delivery{
			{ten[:5], nil, map[idem.Outcome]int{idem.Processed: 5}, 1},
			{ten, nil, map[idem.Outcome]int{idem.Duplicate: 5, idem.Processed: 5}, 2},
		}, map[string]int{"acc-4": 16, "acc-5": 32}},
		{"re-sent, malformed and failing records", []delivery{
			{[]events.SQSMessage{
				record("m1", `{"account":"acc-9","cents":500}`, sqsconsumer.KeyAttribute, "evt_001"),
				record("m2", `{"account":"acc-7","cents":250}`),
				record("m3", `{"account":"acc-9","cents":500}`, sqsconsumer.KeyAttribute, "evt_001"),
				record("m4", `{"account":"acc-9","cents":`),
				record("m5", "panic"),
				record("m6", `{"account":"acc-8","cents":900}`, sqsconsumer.KeyAttribute, "evt_001"),
			}, []string{"m4", "m5", "m6"}, map[idem.Outcome]int{idem.Processed: 2, idem.Duplicate: 1, idem.Failed: 2, idem.KeyReuse: 1}, 1},
		}, map[string]int{"acc-9": 500, "acc-7": 250, "acc-8": 0}},
		{"records of one account: one transaction, their credits one action", []delivery{
			{credits("s", 3, func(int) string { return "acc-same" }), nil, map[idem.Outcome]int{idem.Processed: 3}, 1},
		}, map[string]int{"acc-same": 7}},
		{"FIFO: one record per group per transaction", []delivery{
			{[]events.SQSMessage{
				fifo("a1", "A", `{"account":"acc-a","cents":1}`),
				fifo("b1", "B", `{"account":"acc-b","cents":10}`),
				fifo("a2", "A", "fail"),
				fifo("b2", "B", `{"account":"acc-b","cents":20}`),
				fifo("a3", "A", `{"account":"acc-a","cents":100}`),
				fifo("c1", "C", "panic"),
				fifo("c2", "C", `{"account":"acc-c","cents":1000}`),
				fifo("b3", "B", `{"account":"acc-b","cents":30}`),
			}, []string{"a2", "a3", "c1", "c2"}, map[idem.Outcome]int{idem.Processed: 4, idem.Failed: 4}, 3},
		}, map[string]int{"acc-a": 1, "acc-b": 60, "acc-c": 0}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			calls := e.Calls
			for d, dl := range tc.deliveries {
				e.outcomes(t)
				calls.Reset()
				checkFailed(t, e.run(t, context.Background(), dl.batch, batchMode), dl.failed...)
				checkOutcomes(t, e.outcomes(t), dl.want)
				if n := calls.Count("TransactWriteItems"); n != dl.calls {
					t.Errorf("delivery %d: want %d TransactWriteItems, got %d", d, dl.calls, n)
				}
			}
			e.checkBalances(t, tc.balances)
		})
	}
}

// TestBatchTransactionsKeepFIFOOrder: a group's records reach the handler
// in order, and none after the group's first failure.
func TestBatchTransactionsKeepFIFOOrder(t *testing.T) {
	e := newEnv(t)
	batch := []events.SQSMessage{
		fifo("a1", "A", `{"account":"acc-a","cents":1}`),
		fifo("b1", "B", `{"account":"acc-b","cents":10}`),
		fifo("a2", "A", "fail"),
		fifo("b2", "B", `{"account":"acc-b","cents":20}`),
		fifo("a3", "A", `{"account":"acc-a","cents":100}`),
		fifo("b3", "B", `{"account":"acc-b","cents":30}`),
	}
	checkFailed(t, e.run(t, context.Background(), batch, batchMode), "a2", "a3")
	if e.runs.ran("a3") {
		t.Error("a3 ran after a2 failed")
	}
	got := e.runs.order("a1", "a2", "b1", "b2", "b3")
	for group, want := range map[string][]string{"A": {"a1", "a2"}, "B": {"b1", "b2", "b3"}} {
		if !slices.Equal(filter(got, group), want) {
			t.Errorf("group %s ran %q, want %q", group, filter(got, group), want)
		}
	}
	if !strings.Contains(e.logs.String(), "an earlier record of its message group failed") {
		t.Errorf("skipped records are not logged:\n%s", e.logs.String())
	}
}

// TestBatchTransactionsConcurrentRedelivery hands one batch to four
// function instances at once: each credit lands once.
func TestBatchTransactionsConcurrentRedelivery(t *testing.T) {
	e := newEnv(t)
	batch := credits("m", 10, func(i int) string { return fmt.Sprint("acc-", i%3) })
	var wg sync.WaitGroup
	start := make(chan struct{})
	for range 4 {
		wg.Go(func() {
			<-start
			if failed := e.run(t, context.Background(), batch, batchMode); len(failed) > 0 {
				t.Errorf("failed: %q", failed)
			}
		})
	}
	close(start)
	wg.Wait()
	e.checkBalances(t, map[string]int{"acc-0": 1 + 8 + 64 + 512, "acc-1": 2 + 16 + 128, "acc-2": 4 + 32 + 256})
	checkOutcomes(t, e.outcomes(t), map[idem.Outcome]int{idem.Processed: 10, idem.Duplicate: 30})
}

// TestBatchTransactionsRecordedRejection: a rejection the effect records
// is a success, replayed to its redeliveries; an unrecorded one fails.
func TestBatchTransactionsRecordedRejection(t *testing.T) {
	e := newEnv(t)
	debit := debit(e.Accounts, "acc-9", 100)
	h := newHandler(t, e.store, func(_ context.Context, rec events.SQSMessage) (idem.Effect, error) {
		if rec.Body != "recorded" && rec.Body != "unrecorded" {
			return e.handler(rec)
		}
		eff := idem.Effect{Writes: []types.TransactWriteItem{debit}}
		if rec.Body == "recorded" {
			eff.Rejected = func(*idem.RejectedError) ([]byte, error) { return []byte("insufficient funds"), nil }
		}
		return eff, nil
	}, batchMode)
	batch := events.SQSEvent{Records: []events.SQSMessage{record("m1", "recorded"), record("m2", "unrecorded"), record("m3", `{"account":"acc-1","cents":5}`)}}
	for _, want := range []map[idem.Outcome]int{
		{idem.Rejected: 1, idem.Failed: 1, idem.Processed: 1},
		{idem.Duplicate: 2, idem.Failed: 1},
	} {
		resp, err := h(context.Background(), batch)
		if err != nil || len(resp.BatchItemFailures) != 1 || resp.BatchItemFailures[0].ItemIdentifier != "m2" {
			t.Fatalf("want only the unrecorded rejection m2 failed, got %v, %v", resp.BatchItemFailures, err)
		}
		checkOutcomes(t, e.outcomes(t), want)
	}
	e.checkBalances(t, map[string]int{"acc-1": 5, "acc-9": 0})
}
