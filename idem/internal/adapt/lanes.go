package adapt

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/idemkit/kit/idem"
	"github.com/idemkit/kit/idem/batch"
	"github.com/idemkit/kit/idem/internal/seam"
)

// The defaults of batch.Options, which its fields document.
const (
	DefaultConcurrency    = 10 // the event source mappings' default batch size
	DefaultDeadlineMargin = 2 * time.Second
)

// Records is what a batch adapter alone knows of its records of type R,
// which its users' handlers and KeyFuncs read as a K (events.SQSMessage,
// events.KafkaRecord).
type Records[R, K any] struct {
	// Handle is the user's handler; New refuses a nil one.
	Handle func(ctx context.Context, rec K) (idem.Effect, error)

	// Record is what of rec the user's handler and KeyFunc read.
	Record func(rec R) K

	// Message is rec as the Store takes it, without its ID. With an error
	// rec cannot be claimed, and the message holds what its log line can
	// name.
	Message func(rec R) (idem.Message, error)

	// DefaultKey is the adapter's key when batch.Options.Key is nil.
	DefaultKey batch.KeyFunc[K]

	// NoKey is the error of a record whose key is empty: the adapter's
	// ErrNoKey.
	NoKey error

	// NoSource says why a record whose message has no Source fails: its key
	// would fall in the shared "default" scope, where another sender's ids
	// are.
	NoSource error

	// Name names rec in errors as the batch response names it.
	Name func(rec R) string

	// Stopped says why rec does not start: after, an earlier record of its
	// lane, failed.
	Stopped func(rec, after R) error

	// Span is rec's delivery span, named when the delivery is traced.
	Span func(rec R) seam.Span
}

// A LaneRunner runs a batch adapter's records through a Store in lanes: a
// lane's records (an SQS FIFO message group's, a Kafka partition's, or a
// standard queue's record alone) one after another, in order, none after
// the first that failed, so that the source redelivers the lane from that
// record on, in order. Lanes run at once up to Concurrency, each record in
// a transaction of its own; with BatchTransactions, in waves of one record
// of each lane, each wave committed together (waves.go).
type LaneRunner[R, K any] struct {
	proc *Processor
	recs Records[R, K]
	opts batch.Options[K]
	pkg  string
}

// NewLaneRunner checks, once, the options a batch adapter named pkg
// ("sqsconsumer") was built with, and applies their defaults. Its errors
// read as the adapter's New's.
func NewLaneRunner[R, K any](store *idem.Store, pkg string, o batch.Options[K], recs Records[R, K]) (*LaneRunner[R, K], error) {
	if recs.Handle == nil {
		return nil, fmt.Errorf("%s: New: nil Handler", pkg)
	}
	if o.Lease != nil && o.BatchTransactions {
		return nil, fmt.Errorf("%s: New: Options.Lease and BatchTransactions exclude each other: a lease claims each record before its handler runs, alone", pkg)
	}
	proc, err := New(store, "Options", o.Source, o.Lease)
	if err != nil {
		return nil, fmt.Errorf("%s: New: %w", pkg, err)
	}
	if o.Concurrency <= 0 {
		o.Concurrency = DefaultConcurrency
	}
	if o.DeadlineMargin == 0 {
		o.DeadlineMargin = DefaultDeadlineMargin
	}
	if o.Key == nil {
		o.Key = recs.DefaultKey
	}
	return &LaneRunner[R, K]{proc: proc, recs: recs, opts: o, pkg: pkg}, nil
}

// Run runs recs, split into lanes of indexes into recs, and returns each
// record's failure, nil for a record that committed or was a duplicate.
// It never panics and never returns early: a function error or a crash
// would send the whole batch back, the records that committed included.
func (l *LaneRunner[R, K]) Run(ctx context.Context, recs []R, lanes [][]int) []error {
	errs := make([]error, len(recs))
	// Records start while more than the margin remains (ctx); the ones
	// running are cut off at half of it (work), so that the response is
	// returned before Lambda times out.
	work := ctx
	if d, ok := ctx.Deadline(); ok && l.opts.DeadlineMargin > 0 {
		var cancel context.CancelFunc
		work, cancel = context.WithDeadline(ctx, d.Add(-l.opts.DeadlineMargin/2))
		defer cancel()
	}
	if !l.opts.BatchTransactions {
		l.runLanes(ctx, work, recs, lanes, errs)
		return errs
	}
	// runWaves runs on the invoke's goroutine, where the runtime would turn
	// a panic into a function error: fail every record not failed yet
	// instead (one whose wave committed comes back a Duplicate).
	if err := guard("processing the batch", func() error { l.runWaves(ctx, work, recs, lanes, errs); return nil }); err != nil {
		for i := range errs {
			if errs[i] == nil {
				errs[i] = err
			}
		}
	}
	return errs
}

// runLanes runs the lanes on up to Options.Concurrency workers.
func (l *LaneRunner[R, K]) runLanes(ctx, work context.Context, recs []R, lanes [][]int, errs []error) {
	var (
		next atomic.Int64
		wg   sync.WaitGroup
	)
	worker := func() {
		for i := int(next.Add(1) - 1); i < len(lanes); i = int(next.Add(1) - 1) {
			l.runLane(ctx, work, recs, lanes[i], errs)
		}
	}
	// The calling goroutine is one of the workers: a batch of one lane
	// starts no goroutine.
	for range min(l.opts.Concurrency, len(lanes)) - 1 {
		wg.Go(worker)
	}
	worker()
	wg.Wait()
}

// runLane processes a lane's records in order; after the first failure the
// rest are reported failed unprocessed, which keeps the lane's order.
func (l *LaneRunner[R, K]) runLane(ctx, work context.Context, recs []R, lane []int, errs []error) {
	failed := -1
	for _, i := range lane {
		rec := recs[i]
		errs[i] = guard("processing the record", func() error {
			switch {
			case failed >= 0:
				return l.skip(ctx, rec, l.recs.Stopped(rec, recs[failed]))
			case !l.mayStart(ctx):
				return l.skip(ctx, rec, idem.ErrDeadline)
			}
			return l.process(work, rec)
		})
		if errs[i] != nil && failed < 0 {
			failed = i
		}
	}
}

// guard turns a panic in fn into a *idem.PanicError naming what. The
// callbacks the Store calls have their own recovery; guard catches what has
// none, such as the Store's Logger or Metrics writer: a panic would end the
// process (on a worker goroutine) or the invoke (on the caller's), and
// either way no batch response would say which records committed. It
// reports nothing: the panic may have come from the reporting.
func guard(what string, fn func() error) error {
	return Recover("", what, fn)
}

// mayStart says whether a record may start: more than the margin remains.
func (l *LaneRunner[R, K]) mayStart(ctx context.Context) bool {
	if ctx.Err() != nil {
		return false
	}
	d, ok := ctx.Deadline()
	return !ok || l.opts.DeadlineMargin < 0 || time.Until(d) > l.opts.DeadlineMargin
}

// process runs one record through the Store, which logs and counts it.
func (l *LaneRunner[R, K]) process(ctx context.Context, rec R) error {
	msg, err := l.keyed(ctx, rec)
	if err != nil {
		return err
	}
	if l.proc.Tracing(ctx) {
		ctx = seam.WithSpan(ctx, l.recs.Span(rec))
	}
	_, err = l.proc.Process(ctx, msg, func(ctx context.Context, _ idem.Message) (idem.Effect, error) {
		return l.recs.Handle(ctx, l.recs.Record(rec))
	})
	return err
}

// keyed is the record's message, or the reported failure to make it.
func (l *LaneRunner[R, K]) keyed(ctx context.Context, rec R) (idem.Message, error) {
	msg, err := l.recs.Message(rec)
	var key string
	if err == nil {
		key, err = l.key(rec)
	}
	if err == nil && msg.Source == "" {
		err = l.recs.NoSource
	}
	if err != nil {
		if msg.Source != "" {
			msg.ID = key // read before the record was found unusable: its log line names it
		}
		err = fmt.Errorf("record %s: %w", l.recs.Name(rec), err)
		l.proc.Fail(ctx, msg, err)
		return idem.Message{}, err
	}
	msg.ID = key
	return msg, nil
}

// key runs Options.Key (ReadKey): with an error, the key is the one
// Options.Key read before it failed, if any, for the log line.
func (l *LaneRunner[R, K]) key(rec R) (string, error) {
	return ReadKey(l.pkg+".Options.Key", l.recs.NoKey, func() (string, error) { return l.opts.Key(l.recs.Record(rec)) })
}

// skip reports a record that was not processed; the Store logs and counts
// it like any other failure.
func (l *LaneRunner[R, K]) skip(ctx context.Context, rec R, why error) error {
	msg, _ := l.recs.Message(rec)
	msg.ID, _ = l.key(rec)
	err := fmt.Errorf("record %s: %w", l.recs.Name(rec), why)
	l.proc.Fail(ctx, msg, err)
	return err
}

// Failed is the batch response's list of the records to retry: item(i)
// for each record i whose err is not nil, in batch order, and an empty
// list, never null, when none failed.
func Failed[F any](errs []error, item func(i int) F) []F {
	out := []F{}
	for i, err := range errs {
		if err != nil {
			out = append(out, item(i))
		}
	}
	return out
}
