package seams_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemkit/kit/idem"
)

// TestCoalescing: 8 deliveries of one key at once in one process (Lambda
// Managed Instances run several invokes in one), through each way in: one
// handler run, one transaction, and 7 Duplicates answered from it without
// a call.
func TestCoalescing(t *testing.T) {
	const n = 8
	for _, wy := range ways {
		t.Run(wy.name, func(t *testing.T) {
			w := newWorld(t)
			s := w.store(t)
			var runs atomic.Int32
			release := make(chan struct{})
			h := func(context.Context) (idem.Effect, error) {
				runs.Add(1)
				<-release // the leader holds its flight until every delivery has joined it
				return idem.Effect{Writes: []types.TransactWriteItem{w.credit("acc-1", 1)}}, nil
			}
			w.Calls.Reset()
			before := w.rec.len()
			started := make(chan struct{}, n)
			errs := make([]error, n)
			var wg sync.WaitGroup
			for i := range n {
				wg.Go(func() {
					started <- struct{}{}
					errs[i] = wy.deliver(context.Background(), s, m1, h, panics{})
				})
			}
			for range n {
				<-started
			}
			time.Sleep(300 * time.Millisecond) // the deliveries reach the flight; not a timed assertion
			close(release)
			wg.Wait()
			for i, err := range errs {
				if err != nil {
					t.Errorf("delivery %d: %v", i, err)
				}
			}
			outcomes := map[idem.Outcome]int{}
			for _, o := range w.rec.since(before) {
				outcomes[o]++
			}
			txs, leases := w.Calls.Count("TransactWriteItems"), w.Calls.Count("UpdateItem")
			t.Logf("handler runs %d, TransactWriteItems %d, UpdateItem %d, outcomes %v, balance %d", runs.Load(), txs, leases, outcomes, w.Balance(t, "acc-1"))
			if runs.Load() != 1 || txs != 1 || outcomes[idem.Processed] != 1 || outcomes[idem.Duplicate] != n-1 {
				t.Errorf("want 1 handler run, 1 transaction, 1 Processed and %d Duplicates", n-1)
			}
			if wantLeases := map[bool]int{true: 1}[wy.name == "ProcessLeased"]; leases != wantLeases {
				t.Errorf("want %d UpdateItem, got %d", wantLeases, leases)
			}
			if w.Balance(t, "acc-1") != 1 {
				t.Errorf("want one credit, got %d", w.Balance(t, "acc-1"))
			}
		})
	}
}
