package adapt

import (
	"context"

	"github.com/idemkit/kit/idem"
	"github.com/idemkit/kit/idem/internal/seam"
)

// runWaves is the batch-transactions mode: wave w is the w-th record of
// every lane, committed through one Store.ProcessBatch. A batch of lanes of
// one record (a standard queue's) is one wave. A lane gives each wave at
// most one record, so its records commit one wave after another, in order,
// each handler running after the record before it committed, and after its
// first failure the rest of the lane is reported failed without being
// processed. Two records of one lane in one call could not keep that: the
// later one's handler would run before the earlier one's effect, and it
// could commit when the earlier one failed.
func (l *LaneRunner[R, K]) runWaves(ctx, work context.Context, recs []R, lanes [][]int, errs []error) {
	failed := make([]int, len(lanes)) // the lane's first failed record, or -1
	for i := range failed {
		failed[i] = -1
	}
	fail := func(ln, i int, err error) {
		errs[i] = err
		if failed[ln] < 0 {
			failed[ln] = i
		}
	}
	for w := 0; ; w++ {
		var (
			idx, lane []int // the wave's records and their lanes
			msgs      []idem.Message
			more      bool
		)
		for ln, recsOf := range lanes {
			if w >= len(recsOf) {
				continue
			}
			more = true
			i := recsOf[w]
			rec := recs[i]
			switch {
			case failed[ln] >= 0:
				fail(ln, i, l.skip(ctx, rec, l.recs.Stopped(rec, recs[failed[ln]])))
			case !l.mayStart(ctx):
				fail(ln, i, l.skip(ctx, rec, idem.ErrDeadline))
			default:
				msg, err := l.keyed(ctx, rec)
				if err != nil {
					fail(ln, i, err)
					continue
				}
				idx, lane, msgs = append(idx, i), append(lane, ln), append(msgs, msg)
			}
		}
		if !more {
			return
		}
		if len(msgs) == 0 {
			continue
		}
		bctx := work
		if l.proc.Tracing(work) {
			spans := make([]seam.Span, len(idx))
			for j, i := range idx {
				spans[j] = l.recs.Span(recs[i])
			}
			bctx = seam.WithBatchSpans(work, spans)
		}
		out := l.proc.Store.ProcessBatch(bctx, msgs, func(ctx context.Context, j int, _ idem.Message) (idem.Effect, error) {
			return l.recs.Handle(ctx, l.recs.Record(recs[idx[j]]))
		})
		for j, r := range out {
			if r.Err != nil {
				fail(lane[j], idx[j], r.Err)
			}
		}
	}
}
