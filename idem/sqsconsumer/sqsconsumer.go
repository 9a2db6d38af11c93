package sqsconsumer

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/idemkit/kit/idem"
	"github.com/idemkit/kit/idem/internal/adapt"
	"github.com/idemkit/kit/idem/internal/seam"
)

// Handler reads one record and describes its effect, as an idem.Handler
// does; idem.FromContext gives the message the kit built from it.
type Handler func(ctx context.Context, rec events.SQSMessage) (idem.Effect, error)

// errGroupStopped reports a record not processed because an earlier record
// of its FIFO message group failed: it must wait, to keep the group's
// order. A record not started for the deadline is idem.ErrDeadline.
var errGroupStopped = errors.New("sqsconsumer: not started: an earlier record of its message group failed")

// Options configure the batch handler New returns. Every default is written
// once, on its field, and applied in New.
type Options struct {
	// Key reads a record's idempotency key; a record whose key is empty or
	// unreadable is reported failed. Defaults to DefaultKey.
	Key KeyFunc

	// Source names the sender in logs and metrics and, unless the Store
	// sets idem.Options.Scope, scopes the keys, so New refuses one the
	// Store cannot take as a message's Source. Defaults to the queue's name, the last
	// segment of the record's eventSourceARN.
	Source string

	// Concurrency bounds how many records are processed at once (for FIFO
	// queues, how many message groups); unused with BatchTransactions.
	// Defaults to 10, the event source mapping's default batch size.
	Concurrency int

	// BatchTransactions commits the batch's records together, through
	// idem.Store.ProcessBatch, in as few transactions as DynamoDB's limits
	// allow: one call for a batch of new records whose effects touch
	// different items, two when it holds duplicates. Handlers run one after
	// another. On a FIFO queue each transaction takes at most one record
	// per message group, so a group's records still commit in order.
	// Defaults to false: each record in a transaction of its own,
	// concurrently.
	BatchTransactions bool

	// DeadlineMargin is the time kept in hand before the Lambda deadline:
	// no record starts once less remains, and records already running are
	// cut off at half of it, so the batch response is returned before
	// Lambda times out (a timeout would return the whole batch). Keep it
	// well under the function's timeout. Negative turns both off.
	// Defaults to 2 seconds.
	DeadlineMargin time.Duration

	// Lease, when set, runs each record's handler under a lease
	// (idem.Store.ProcessLeased), for handlers that call other services
	// before their writes can be described: the claim is taken first, the
	// handler calls out with idem.LeaseFromContext's key, and a record whose
	// lease another delivery holds is reported failed, to come back after
	// the visibility timeout. The lease ends DeadlineMargin/2 plus
	// LeaseOptions.Reserve before the Lambda deadline at the latest. Not
	// with BatchTransactions. Defaults to nil: no lease, the claim and the
	// effect in one transaction.
	Lease *idem.LeaseOptions
}

type consumer struct {
	proc *adapt.Processor
	h    Handler
	opts Options
}

// New returns a handler for lambda.Start that processes an SQS batch
// through store, each record in its own claim and effect transaction, and
// reports the records to retry. The event source mapping must set
// FunctionResponseTypes to ReportBatchItemFailures. New refuses a nil store
// or h, an Options.Source that store cannot take as a message's Source,
// and lease options it cannot honour.
func New(store *idem.Store, h Handler, optFns ...func(*Options)) (func(context.Context, events.SQSEvent) (events.SQSEventResponse, error), error) {
	if h == nil {
		return nil, errors.New("sqsconsumer: New: nil Handler")
	}
	var o Options
	for _, fn := range optFns {
		fn(&o)
	}
	if o.Lease != nil && o.BatchTransactions {
		return nil, errors.New("sqsconsumer: New: Options.Lease and BatchTransactions exclude each other: a lease claims each record before its handler runs, alone")
	}
	proc, err := adapt.New(store, "Options", o.Source, o.Lease)
	if err != nil {
		return nil, fmt.Errorf("sqsconsumer: New: %w", err)
	}
	if o.Key == nil {
		o.Key = DefaultKey
	}
	if o.Concurrency <= 0 {
		o.Concurrency = 10
	}
	if o.DeadlineMargin == 0 {
		o.DeadlineMargin = 2 * time.Second
	}
	c := &consumer{proc: proc, h: h, opts: o}
	return c.handle, nil
}

// handle never returns an error: a function error would send every record
// back, including the ones whose effects just committed.
func (c *consumer) handle(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
	recs := ev.Records
	errs := make([]error, len(recs))
	work := ctx
	if d, ok := ctx.Deadline(); ok && c.opts.DeadlineMargin > 0 {
		var cancel context.CancelFunc
		work, cancel = context.WithDeadline(ctx, d.Add(-c.opts.DeadlineMargin/2))
		defer cancel()
	}
	if c.opts.BatchTransactions {
		// runWaves runs on this goroutine, where the runtime would turn a
		// panic into a function error and SQS would return the whole batch:
		// fail every record not failed yet instead (one whose wave
		// committed comes back a Duplicate).
		if err := guard("processing the batch", func() error { c.runWaves(ctx, work, recs, lanes(recs), errs); return nil }); err != nil { // batch.go
			for i := range errs {
				if errs[i] == nil {
					errs[i] = err
				}
			}
		}
	} else {
		c.runLanes(ctx, work, recs, lanes(recs), errs)
	}
	resp := events.SQSEventResponse{BatchItemFailures: []events.SQSBatchItemFailure{}}
	for i, err := range errs {
		if err != nil {
			resp.BatchItemFailures = append(resp.BatchItemFailures, events.SQSBatchItemFailure{ItemIdentifier: recs[i].MessageId})
		}
	}
	return resp, nil
}

// runLanes runs the lanes on up to Options.Concurrency workers.
func (c *consumer) runLanes(ctx, work context.Context, recs []events.SQSMessage, lanes [][]int, errs []error) {
	var (
		next atomic.Int64
		wg   sync.WaitGroup
	)
	worker := func() {
		for i := int(next.Add(1) - 1); i < len(lanes); i = int(next.Add(1) - 1) {
			c.runLane(ctx, work, recs, lanes[i], errs)
		}
	}
	// The calling goroutine is one of the workers: a batch of one record
	// (or one FIFO group) starts no goroutine.
	for range min(c.opts.Concurrency, len(lanes)) - 1 {
		wg.Go(worker)
	}
	worker()
	wg.Wait()
}

// lanes splits a batch into sequences of record indexes run one after
// another: one per FIFO message group, in arrival order, and one per record
// of a standard queue.
func lanes(recs []events.SQSMessage) [][]int {
	out := make([][]int, 0, len(recs))
	group := map[[2]string]int{}
	for i, rec := range recs {
		if !isFIFO(rec) {
			out = append(out, []int{i})
			continue
		}
		g := [2]string{rec.EventSourceARN, rec.Attributes["MessageGroupId"]}
		j, ok := group[g]
		if !ok {
			j = len(out)
			group[g] = j
			out = append(out, nil)
		}
		out[j] = append(out[j], i)
	}
	return out
}

// runLane processes a lane's records in order; after the first failure the
// rest are reported failed unprocessed, which keeps a FIFO group's order.
func (c *consumer) runLane(ctx, work context.Context, recs []events.SQSMessage, lane []int, errs []error) {
	failed := -1
	for _, i := range lane {
		rec := recs[i]
		errs[i] = guard("processing the record", func() error {
			switch {
			case failed >= 0:
				return c.skip(ctx, rec, fmt.Errorf("%w (group %q, after %s)", errGroupStopped, rec.Attributes["MessageGroupId"], recs[failed].MessageId))
			case !c.mayStart(ctx):
				return c.skip(ctx, rec, idem.ErrDeadline)
			}
			return c.processRecord(work, rec)
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
	return adapt.Recover("", what, fn)
}

func (c *consumer) mayStart(ctx context.Context) bool {
	if ctx.Err() != nil {
		return false
	}
	d, ok := ctx.Deadline()
	return !ok || c.opts.DeadlineMargin < 0 || time.Until(d) > c.opts.DeadlineMargin
}

// processRecord runs one record through the Store, which logs and counts
// it.
func (c *consumer) processRecord(ctx context.Context, rec events.SQSMessage) error {
	msg, err := c.keyed(ctx, rec)
	if err != nil {
		return err
	}
	if c.proc.Tracing(ctx) {
		ctx = seam.WithSpan(ctx, span(rec))
	}
	_, err = c.proc.Process(ctx, msg, func(ctx context.Context, _ idem.Message) (idem.Effect, error) {
		return c.h(ctx, rec)
	})
	return err
}

// keyed is the record's message, or the reported failure to read its key.
func (c *consumer) keyed(ctx context.Context, rec events.SQSMessage) (idem.Message, error) {
	msg := c.message(rec)
	key, err := c.key(rec)
	if err == nil && msg.Source == "" {
		// Its key would fall in the shared "default" scope, where another
		// sender's ids are.
		err = errors.New("the record names no queue (its eventSourceARN is empty, or ends before a queue's name) and Options.Source is unset")
	}
	if err != nil {
		if msg.Source != "" {
			msg.ID = key // read before the record was found unusable: its log line names it
		}
		err = fmt.Errorf("record %s: %w", rec.MessageId, err)
		c.proc.Fail(ctx, msg, err)
		return idem.Message{}, err
	}
	msg.ID = key
	return msg, nil
}

// skip reports a record that was not processed; the Store logs and counts
// it like any other failure.
func (c *consumer) skip(ctx context.Context, rec events.SQSMessage, why error) error {
	msg := c.message(rec)
	msg.ID, _ = c.key(rec)
	err := fmt.Errorf("record %s: %w", rec.MessageId, why)
	c.proc.Fail(ctx, msg, err)
	return err
}

func (c *consumer) message(rec events.SQSMessage) idem.Message {
	src := c.opts.Source
	if src == "" {
		src = QueueName(rec.EventSourceARN)
	}
	// The messageId in the log line is what batchItemFailures names.
	// The receive count tells a redelivery from a first delivery: in a
	// redelivery storm only the redeliveries read their claim first.
	attempt, _ := strconv.Atoi(rec.Attributes["ApproximateReceiveCount"])
	return idem.Message{Source: src, Payload: []byte(rec.Body), Attempt: attempt, LogAttrs: []slog.Attr{slog.String("messageId", rec.MessageId)}}
}

// key runs Options.Key, turning an empty key into ErrNoKey and a panic into
// a *idem.PanicError, so one bad record cannot crash the batch. With an
// error, the key is the one Options.Key read before it failed, if any: for
// the log, never for a claim.
func (c *consumer) key(rec events.SQSMessage) (key string, err error) {
	err = adapt.Recover("", "sqsconsumer.Options.Key", func() error {
		var kerr error
		key, kerr = c.opts.Key(rec)
		return kerr
	})
	if adapt.Panic(err) != nil {
		return "", err
	}
	if err != nil {
		return key, err
	}
	if key == "" {
		return "", ErrNoKey
	}
	return key, nil
}
