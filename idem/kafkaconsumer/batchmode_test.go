package kafkaconsumer_test

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/idemkit/kit/idem"
	"github.com/idemkit/kit/idem/idemtest"
)

// spread is n records of 1, 2, 4, … cents, record i in partition
// partition(i), at offset i, crediting account(i).
func spread(n int, partition func(i int) int64, account func(i int) string) []events.KafkaRecord {
	out := make([]events.KafkaRecord, n)
	for i := range out {
		out[i] = rec(partition(i), int64(i), fmt.Sprintf(`{"account":%q,"cents":%d}`, account(i), 1<<i), "")
	}
	return out
}

// TestBatchTransactions: in batch mode each ProcessBatch call takes at
// most one record of each partition; the TransactWriteItems calls of each
// delivery, the outcomes and the balances, with the batch mode off for
// comparison.
func TestBatchTransactions(t *testing.T) {
	own := func(i int) string { return fmt.Sprint("acc-", i) }
	each := func(i int) int64 { return int64(i) }
	one := func(int) int64 { return 0 }
	ten := spread(10, each, own)
	type delivery struct {
		recs          []events.KafkaRecord
		want          map[idem.Outcome]int
		calls, single int // TransactWriteItems in batch mode, and per record
	}
	for _, tc := range []struct {
		name       string
		deliveries []delivery
		balances   map[string]int
	}{
		{"ten partitions, then redelivered: one call each", []delivery{
			{ten, map[idem.Outcome]int{idem.Processed: 10}, 1, 10},
			{ten, map[idem.Outcome]int{idem.Duplicate: 10}, 1, 10},
		}, map[string]int{"acc-0": 1, "acc-9": 512}},
		{"half redelivered: two calls", []delivery{
			{ten[:5], map[idem.Outcome]int{idem.Processed: 5}, 1, 5},
			{ten, map[idem.Outcome]int{idem.Duplicate: 5, idem.Processed: 5}, 2, 10},
		}, map[string]int{"acc-4": 16, "acc-5": 32}},
		{"one partition of four: a call per record, in order", []delivery{
			{spread(4, one, own), map[idem.Outcome]int{idem.Processed: 4}, 4, 4},
		}, map[string]int{"acc-0": 1, "acc-3": 8}},
		{"three partitions of two: two calls", []delivery{
			{spread(6, func(i int) int64 { return int64(i % 3) }, own), map[idem.Outcome]int{idem.Processed: 6}, 2, 6},
		}, map[string]int{"acc-0": 1, "acc-5": 32}},
		{"two partitions crediting one account: one transaction, their credits one action", []delivery{
			{spread(2, each, func(int) string { return "acc-same" }), map[idem.Outcome]int{idem.Processed: 2}, 1, 2},
		}, map[string]int{"acc-same": 3}},
	} {
		for _, mode := range modes {
			t.Run(tc.name+"/"+mode.name, func(t *testing.T) {
				e := newEnv(t)
				for d, dl := range tc.deliveries {
					e.Calls.Reset()
					checkFailed(t, e.run(t, context.Background(), idemtest.KafkaEvent(dl.recs...), mode.opt))
					checkOutcomes(t, e.seen.take(), dl.want)
					want := dl.single
					if mode.name == "BatchTransactions" {
						want = dl.calls
					}
					// A record's calls: its transaction, or, for a redelivery
					// per record, the read of the claim its environment
					// settled (batch transactions read nothing).
					if n := e.Calls.Count("TransactWriteItems") + e.Calls.Count("GetItem"); n != want {
						t.Errorf("delivery %d: want %d calls, got %d", d, want, n)
					}
				}
				e.checkBalances(t, tc.balances)
				for p := range int64(10) {
					tp := fmt.Sprint("credits-", p)
					if got := e.runs.partition(tp); !slices.IsSortedFunc(got, func(a, b string) int { return offsetOf(a) - offsetOf(b) }) {
						t.Errorf("%s ran out of order: %q", tp, got)
					}
				}
			})
		}
	}
}

// offsetOf is the offset of "<partition>@<offset>".
func offsetOf(id string) int {
	n, _ := strconv.Atoi(id[strings.LastIndexByte(id, '@')+1:])
	return n
}
