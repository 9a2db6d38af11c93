package sqsconsumer

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/idemkit/kit/idem"
	"github.com/idemkit/kit/idem/internal/adapt"
)

// Handler reads one record and describes its effect, as an idem.Handler
// does; idem.FromContext gives the message the kit built from it.
type Handler func(ctx context.Context, rec events.SQSMessage) (idem.Effect, error)

// BatchHandler is the handler New returns, for lambda.Start: a function of
// aws-lambda-go's SQS event and batch response, named so that a wrapper
// (a log line, a metric) can say what it takes and gives:
//
//	func logged(h sqsconsumer.BatchHandler) sqsconsumer.BatchHandler {
//		return func(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
//			resp, err := h(ctx, ev)
//			slog.Info("batch", "records", len(ev.Records), "retry", len(resp.BatchItemFailures))
//			return resp, err
//		}
//	}
type BatchHandler func(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error)

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

// consumer is the batch handler New returns.
type consumer struct {
	lanes *adapt.LaneRunner[events.SQSMessage]
	opts  Options
}

// New returns a handler for lambda.Start that processes an SQS batch
// through store, each record in its own claim and effect transaction, and
// reports the records to retry. The event source mapping must set
// FunctionResponseTypes to ReportBatchItemFailures. New refuses a nil store
// or h, an Options.Source that store cannot take as a message's Source,
// and lease options it cannot honour.
func New(store *idem.Store, h Handler, optFns ...func(*Options)) (BatchHandler, error) {
	if h == nil {
		return nil, errors.New("sqsconsumer: New: nil Handler")
	}
	var o Options
	for _, fn := range optFns {
		fn(&o)
	}
	if o.Key == nil {
		o.Key = DefaultKey
	}
	c := &consumer{opts: o}
	lanes, err := adapt.NewLaneRunner(store, "sqsconsumer", adapt.LaneOptions{
		Source: o.Source, Lease: o.Lease, Concurrency: o.Concurrency, BatchTransactions: o.BatchTransactions, DeadlineMargin: o.DeadlineMargin,
	}, adapt.Records[events.SQSMessage]{
		Handle:   h,
		Message:  func(rec events.SQSMessage) (idem.Message, error) { return c.message(rec), nil },
		Key:      c.key,
		NoSource: errors.New("the record names no queue (its eventSourceARN is empty, or ends before a queue's name) and Options.Source is unset"),
		Name:     func(rec events.SQSMessage) string { return rec.MessageId },
		Stopped:  stopped,
		Span:     span,
	})
	if err != nil {
		return nil, err
	}
	c.lanes = lanes
	return c.handle, nil
}

// handle never returns an error: a function error would send every record
// back, including the ones whose effects just committed.
func (c *consumer) handle(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
	errs := c.lanes.Run(ctx, ev.Records, lanes(ev.Records))
	return events.SQSEventResponse{BatchItemFailures: adapt.Failed(errs, func(i int) events.SQSBatchItemFailure {
		return events.SQSBatchItemFailure{ItemIdentifier: ev.Records[i].MessageId}
	})}, nil
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

// stopped says why rec waits: after, an earlier record of its FIFO group,
// failed.
func stopped(rec, after events.SQSMessage) error {
	return fmt.Errorf("%w (group %q, after %s)", errGroupStopped, rec.Attributes["MessageGroupId"], after.MessageId)
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

// key runs Options.Key (adapt.ReadKey): with an error, the key is the one
// Options.Key read before it failed, if any, for the log line.
func (c *consumer) key(rec events.SQSMessage) (string, error) {
	return adapt.ReadKey("sqsconsumer.Options.Key", ErrNoKey, func() (string, error) { return c.opts.Key(rec) })
}
