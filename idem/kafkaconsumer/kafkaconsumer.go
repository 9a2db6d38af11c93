package kafkaconsumer

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"slices"
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
// does; idem.FromContext gives the message the kit built from it, whose
// Payload is the record's value, decoded from base64.
type Handler func(ctx context.Context, rec events.KafkaRecord) (idem.Effect, error)

// errPartitionStopped reports a record not processed because an earlier
// record of its partition failed: it must wait, to keep the partition's
// order. A record not started for the deadline is idem.ErrDeadline.
var errPartitionStopped = errors.New("kafkaconsumer: not started: an earlier record of its partition failed")

// Options configure the batch handler New returns. Every default is written
// once, on its field, and applied in New.
type Options struct {
	// Key reads a record's idempotency key; a record whose key is empty or
	// unreadable is reported failed. Defaults to DefaultKey.
	Key KeyFunc

	// Source names the sender in logs and metrics and, unless the Store
	// sets idem.Options.Scope, scopes the keys, so New refuses one the
	// Store cannot take as a message's Source. Defaults to the record's
	// topic: two topics may use one id for two messages.
	Source string

	// Concurrency bounds how many partitions are processed at once; a
	// partition's records run one after another. Unused with
	// BatchTransactions. Defaults to 10.
	Concurrency int

	// BatchTransactions commits the batch's records together, through
	// idem.Store.ProcessBatch, in as few transactions as DynamoDB's limits
	// allow, each call taking at most one record of each partition, so a
	// partition's records still commit in order. Handlers run one after
	// another. Defaults to false: each record in a transaction of its own,
	// partitions concurrently.
	BatchTransactions bool

	// DeadlineMargin is the time kept in hand before the Lambda deadline:
	// no record starts once less remains, and records already running are
	// cut off at half of it, so the batch response is returned before
	// Lambda times out (a timeout would retry the whole batch). Keep it
	// well under the function's timeout. Negative turns both off.
	// Defaults to 2 seconds.
	DeadlineMargin time.Duration

	// Lease, when set, runs each record's handler under a lease
	// (idem.Store.ProcessLeased), for handlers that call other services
	// before their writes can be described: the claim is taken first, the
	// handler calls out with idem.LeaseFromContext's key, and a record whose
	// lease another delivery holds is reported failed, with the rest of its
	// partition. The lease ends DeadlineMargin/2 plus LeaseOptions.Reserve
	// before the Lambda deadline at the latest. Not with
	// BatchTransactions. Defaults to nil: no lease, the claim and the
	// effect in one transaction.
	Lease *idem.LeaseOptions
}

type consumer struct {
	proc *adapt.Processor
	h    Handler
	opts Options
}

// New returns a handler for lambda.Start that processes a Kafka batch (an
// Amazon MSK or self-managed Apache Kafka event source mapping's) through
// store, each record in its own claim and effect transaction, and reports
// the records to retry. The event source mapping must set
// FunctionResponseTypes to ReportBatchItemFailures. New refuses a nil store
// or h, an Options.Source that store cannot take as a message's Source,
// and lease options it cannot honour.
func New(store *idem.Store, h Handler, optFns ...func(*Options)) (func(context.Context, events.KafkaEvent) (Response, error), error) {
	if h == nil {
		return nil, errors.New("kafkaconsumer: New: nil Handler")
	}
	var o Options
	for _, fn := range optFns {
		fn(&o)
	}
	if o.Lease != nil && o.BatchTransactions {
		return nil, errors.New("kafkaconsumer: New: Options.Lease and BatchTransactions exclude each other: a lease claims each record before its handler runs, alone")
	}
	proc, err := adapt.New(store, "Options", o.Source, o.Lease)
	if err != nil {
		return nil, fmt.Errorf("kafkaconsumer: New: %w", err)
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

// record is a record of the batch with the key of the event's records map
// it came under, which the response names it by.
type record struct {
	tp  string // "<topic>-<partition>", as Lambda writes it
	rec events.KafkaRecord
}

func (r record) String() string { return r.tp + "@" + strconv.FormatInt(r.rec.Offset, 10) }

// flatten lists the batch's records partition by partition, in the order
// of the partitions' keys, each partition's records in the order Lambda
// gave them (its offsets'), and returns each partition's indexes as a lane.
func flatten(ev events.KafkaEvent) ([]record, [][]int) {
	keys := make([]string, 0, len(ev.Records))
	n := 0
	for k, rs := range ev.Records {
		keys = append(keys, k)
		n += len(rs)
	}
	slices.Sort(keys)
	recs, lanes := make([]record, 0, n), make([][]int, 0, len(keys))
	for _, k := range keys {
		var lane []int
		for _, r := range ev.Records[k] {
			lane = append(lane, len(recs))
			recs = append(recs, record{k, r})
		}
		if len(lane) > 0 {
			lanes = append(lanes, lane)
		}
	}
	return recs, lanes
}

// handle never returns an error: a function error would retry every
// record, including the ones whose effects just committed.
func (c *consumer) handle(ctx context.Context, ev events.KafkaEvent) (Response, error) {
	recs, lanes := flatten(ev)
	errs := make([]error, len(recs))
	work := ctx
	if d, ok := ctx.Deadline(); ok && c.opts.DeadlineMargin > 0 {
		var cancel context.CancelFunc
		work, cancel = context.WithDeadline(ctx, d.Add(-c.opts.DeadlineMargin/2))
		defer cancel()
	}
	if c.opts.BatchTransactions {
		// runWaves runs on this goroutine, where the runtime would turn a
		// panic into a function error and Lambda would retry the whole
		// batch: fail every record not failed yet instead (one whose wave
		// committed comes back a Duplicate).
		if err := guard("processing the batch", func() error { c.runWaves(ctx, work, recs, lanes, errs); return nil }); err != nil { // batch.go
			for i := range errs {
				if errs[i] == nil {
					errs[i] = err
				}
			}
		}
	} else {
		c.runLanes(ctx, work, recs, lanes, errs)
	}
	resp := Response{BatchItemFailures: []BatchItemFailure{}}
	for i, err := range errs {
		if err != nil {
			resp.BatchItemFailures = append(resp.BatchItemFailures, BatchItemFailure{ItemIdentifier{Partition: recs[i].tp, Offset: recs[i].rec.Offset}})
		}
	}
	return resp, nil
}

// runLanes runs the partitions on up to Options.Concurrency workers.
func (c *consumer) runLanes(ctx, work context.Context, recs []record, lanes [][]int, errs []error) {
	var (
		next atomic.Int64
		wg   sync.WaitGroup
	)
	worker := func() {
		for i := int(next.Add(1) - 1); i < len(lanes); i = int(next.Add(1) - 1) {
			c.runLane(ctx, work, recs, lanes[i], errs)
		}
	}
	// The calling goroutine is one of the workers: a batch of one
	// partition starts no goroutine.
	for range min(c.opts.Concurrency, len(lanes)) - 1 {
		wg.Go(worker)
	}
	worker()
	wg.Wait()
}

// runLane processes a partition's records in order; after the first
// failure the rest are reported failed unprocessed, which keeps the
// partition's order: Lambda retries from the first.
func (c *consumer) runLane(ctx, work context.Context, recs []record, lane []int, errs []error) {
	failed := -1
	for _, i := range lane {
		r := recs[i]
		errs[i] = guard("processing the record", func() error {
			switch {
			case failed >= 0:
				return c.skip(ctx, r, fmt.Errorf("%w (after offset %d)", errPartitionStopped, recs[failed].rec.Offset))
			case !c.mayStart(ctx):
				return c.skip(ctx, r, idem.ErrDeadline)
			}
			return c.processRecord(work, r)
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
func (c *consumer) processRecord(ctx context.Context, r record) error {
	msg, err := c.keyed(ctx, r)
	if err != nil {
		return err
	}
	if c.proc.Tracing(ctx) {
		ctx = seam.WithSpan(ctx, span(r))
	}
	_, err = c.proc.Process(ctx, msg, func(ctx context.Context, _ idem.Message) (idem.Effect, error) {
		return c.h(ctx, r.rec)
	})
	return err
}

// keyed is the record's message, or the reported failure to read its key
// or its value.
func (c *consumer) keyed(ctx context.Context, r record) (idem.Message, error) {
	msg, err := c.message(r)
	if err == nil {
		msg.ID, err = c.key(r)
	}
	if err == nil && msg.Source == "" {
		// Its key would fall in the shared "default" scope, where another
		// sender's ids are.
		err = errors.New("the record names no topic and Options.Source is unset")
	}
	if err != nil {
		err = fmt.Errorf("record %s: %w", r, err)
		c.proc.Fail(ctx, msg, err)
		return idem.Message{}, err
	}
	return msg, nil
}

// skip reports a record that was not processed; the Store logs and counts
// it like any other failure.
func (c *consumer) skip(ctx context.Context, r record, why error) error {
	msg, _ := c.message(r)
	msg.ID, _ = c.key(r)
	err := fmt.Errorf("record %s: %w", r, why)
	c.proc.Fail(ctx, msg, err)
	return err
}

// message is the record as the Store takes it: its value, decoded, is the
// payload, and the partition and offset in its log line are what the
// batch response names. Kafka keeps no delivery count: Attempt is 0.
func (c *consumer) message(r record) (idem.Message, error) {
	src := c.opts.Source
	if src == "" {
		src = r.rec.Topic
	}
	msg := idem.Message{Source: src, LogAttrs: []slog.Attr{slog.String("partition", r.tp), slog.Int64("offset", r.rec.Offset)}}
	v, err := base64.StdEncoding.DecodeString(r.rec.Value)
	if err != nil {
		// Lambda encodes every value: only a direct invoke gets here.
		return msg, fmt.Errorf("the value is not base64: %w", err)
	}
	msg.Payload = v
	return msg, nil
}

// key runs Options.Key, turning an empty key into ErrNoKey and a panic into
// a *idem.PanicError, so one bad record cannot crash the batch.
func (c *consumer) key(r record) (key string, err error) {
	err = adapt.Recover("", "kafkaconsumer.Options.Key", func() error {
		var kerr error
		key, kerr = c.opts.Key(r.rec)
		return kerr
	})
	if err != nil {
		return "", err
	}
	if key == "" {
		return "", ErrNoKey
	}
	return key, nil
}
