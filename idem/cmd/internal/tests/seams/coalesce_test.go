package seams_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemkit/kit/idem"
	"github.com/idemkit/kit/idem/webhook"
)

// TestCoalescing: 8 deliveries of one key at once in one process (Lambda
// Managed Instances run several invokes in one), through each way in: one
// handler run, one transaction, and 7 Duplicates answered from it without
// a call. A webhook answers the 7 at once 409 with Retry-After, counted
// InFlight, as the IETF idempotency-key draft answers a request in flight;
// with InFlightWait they wait, and are its Duplicates.
func TestCoalescing(t *testing.T) {
	const n = 8
	for _, wy := range ways {
		modes := []string{""}
		if wy.kind == "webhook" {
			modes = []string{"409", "InFlightWait"}
		}
		for _, mode := range modes {
			t.Run(strings.TrimSuffix(wy.name+"/"+mode, "/"), func(t *testing.T) {
				ctx := context.Background()
				if mode == "InFlightWait" {
					ctx = context.WithValue(ctx, webhookOptionsKey{}, func(o *webhook.Options) { o.InFlightWait = 10 * time.Second })
				}
				coalesce(t, wy, ctx, n, mode == "409")
			})
		}
	}
}

// coalesce sends n deliveries of m1 through wy at once, the first held in
// its handler until every delivery has joined it, and checks one effect:
// the others Duplicates or, inFlight, 409s counted InFlight.
func coalesce(t *testing.T, wy way, ctx context.Context, n int, inFlight bool) {
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
			errs[i] = wy.deliver(ctx, s, m1, h, panics{})
		})
	}
	for range n {
		<-started
	}
	time.Sleep(300 * time.Millisecond) // the deliveries reach the flight; not a timed assertion
	close(release)
	wg.Wait()
	conflicts := 0
	for i, err := range errs {
		var a *answer
		switch {
		case err == nil:
		case inFlight && errors.As(err, &a) && a.status == 409 && a.header["Retry-After"] == "1":
			conflicts++
		default:
			t.Errorf("delivery %d: %v", i, err)
		}
	}
	outcomes := map[idem.Outcome]int{}
	for _, o := range w.rec.since(before) {
		outcomes[o]++
	}
	txs, leases := w.Calls.Count("TransactWriteItems"), w.Calls.Count("UpdateItem")
	t.Logf("handler runs %d, TransactWriteItems %d, UpdateItem %d, outcomes %v, 409s %d, balance %d", runs.Load(), txs, leases, outcomes, conflicts, w.Balance(t, "acc-1"))
	others := idem.Duplicate
	if inFlight {
		others = idem.InFlight
	}
	if runs.Load() != 1 || txs != 1 || outcomes[idem.Processed] != 1 || outcomes[others] != n-1 || inFlight && conflicts != n-1 {
		t.Errorf("want 1 handler run, 1 transaction, 1 Processed and %d %s", n-1, others)
	}
	if wantLeases := map[bool]int{true: 1}[wy.name == "ProcessLeased"]; leases != wantLeases {
		t.Errorf("want %d UpdateItem, got %d", wantLeases, leases)
	}
	if w.Balance(t, "acc-1") != 1 {
		t.Errorf("want one credit, got %d", w.Balance(t, "acc-1"))
	}
}
