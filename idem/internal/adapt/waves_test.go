package adapt_test

import (
	"context"
	"slices"
	"testing"

	"github.com/idemkit/kit/idem"
)

// TestWaves: with BatchTransactions each Store.ProcessBatch call takes at
// most one record of each lane, so a lane's records commit in order, one
// call after another; the TransactWriteItems calls of each delivery show
// it, one call per record without it.
func TestWaves(t *testing.T) {
	each := func(i int) int { return i }
	one := func(int) int { return 0 }
	for _, tc := range []struct {
		name          string
		recs          []testRecord
		calls, single int // TransactWriteItems in batch mode, and per record
	}{
		{"ten lanes: one call", testBatch("w", 10, each), 1, 10},
		{"one lane of four: a call per record", testBatch("w", 4, one), 4, 4},
		{"three lanes of two: two calls", testBatch("w", 6, func(i int) int { return i % 3 }), 2, 6},
		{"lanes of one, two and three records: three calls", []testRecord{{"x1", 0}, {"y1", 1}, {"z1", 2}, {"y2", 1}, {"z2", 2}, {"z3", 2}}, 3, 6},
	} {
		for _, mode := range modes {
			t.Run(tc.name+"/"+mode.name, func(t *testing.T) {
				e := newEnv(t)
				var o laneOptions
				mode.opt(&o)
				d := e.build(t, ways[0], o, e.credit)
				e.Calls.Reset()
				checkFailed(t, d(context.Background(), tc.recs))
				want := tc.single
				if o.BatchTransactions {
					want = tc.calls
				}
				if n := e.Calls.Count("TransactWriteItems"); n != want {
					t.Errorf("want %d TransactWriteItems, got %d", want, n)
				}
				var ids []string
				for _, r := range tc.recs {
					ids = append(ids, r.id)
				}
				e.checkCredited(t, ids...)
				for _, lane := range lanes(tc.recs) {
					var want []string
					for _, i := range lane {
						want = append(want, tc.recs[i].id)
					}
					if got := e.ran(want...); !slices.Equal(got, want) {
						t.Errorf("lane ran %q, want %q", got, want)
					}
				}
				e.checkOutcomes(t, map[idem.Outcome]int{idem.Processed: len(tc.recs)})
			})
		}
	}
}
