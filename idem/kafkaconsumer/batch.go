package kafkaconsumer

import (
	"context"
	"fmt"

	"github.com/idemkit/kit/idem"
	"github.com/idemkit/kit/idem/internal/seam"
)

// runWaves is the batch-transactions mode: wave w is the w-th record of
// every partition, committed through one Store.ProcessBatch. A partition
// gives each wave at most one record, so its records commit one wave after
// another, in order, each handler running after the record before it
// committed, and after its first failure the rest of the partition is
// reported failed without being processed. Two records of one partition
// in one call could not keep that: the later one's handler would run
// before the earlier one's effect, and it could commit when the earlier
// one failed.
func (c *consumer) runWaves(ctx, work context.Context, recs []record, lanes [][]int, errs []error) {
	failed := make([]int, len(lanes)) // the lane's first failed record, or -1
	for l := range failed {
		failed[l] = -1
	}
	fail := func(l, i int, err error) {
		errs[i] = err
		if failed[l] < 0 {
			failed[l] = i
		}
	}
	for w := 0; ; w++ {
		var (
			idx, lane []int // the wave's records and their lanes
			msgs      []idem.Message
			more      bool
		)
		for l, ln := range lanes {
			if w >= len(ln) {
				continue
			}
			more = true
			i := ln[w]
			r := recs[i]
			switch {
			case failed[l] >= 0:
				fail(l, i, c.skip(ctx, r, fmt.Errorf("%w (after offset %d)", errPartitionStopped, recs[failed[l]].rec.Offset)))
			case !c.mayStart(ctx):
				fail(l, i, c.skip(ctx, r, idem.ErrDeadline))
			default:
				msg, err := c.keyed(ctx, r)
				if err != nil {
					fail(l, i, err)
					continue
				}
				idx, lane, msgs = append(idx, i), append(lane, l), append(msgs, msg)
			}
		}
		if !more {
			return
		}
		if len(msgs) == 0 {
			continue
		}
		bctx := work
		if c.proc.Tracing(work) {
			spans := make([]seam.Span, len(idx))
			for j, i := range idx {
				spans[j] = span(recs[i])
			}
			bctx = seam.WithBatchSpans(work, spans)
		}
		out := c.proc.Store.ProcessBatch(bctx, msgs, func(ctx context.Context, j int, _ idem.Message) (idem.Effect, error) {
			return c.h(ctx, recs[idx[j]].rec)
		})
		for j, r := range out {
			if r.Err != nil {
				fail(lane[j], idx[j], r.Err)
			}
		}
	}
}
