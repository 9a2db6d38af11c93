package sqsconsumer

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"

	"github.com/aws/aws-lambda-go/events"

	"github.com/idemkit/kit/idem"
	"github.com/idemkit/kit/idem/batch"
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

// Options configure the batch handler New returns: the options the batch
// consumers share, each default on its field (idem/batch), Key's and
// Source's this package's own (the package doc).
type Options = batch.Options[events.SQSMessage]

// consumer is the batch handler New returns.
type consumer struct {
	lanes  *adapt.LaneRunner[events.SQSMessage, events.SQSMessage]
	source string // Options.Source
}

// New returns a handler for lambda.Start that processes an SQS batch
// through store, each record in its own claim and effect transaction, and
// reports the records to retry. The event source mapping must set
// FunctionResponseTypes to ReportBatchItemFailures. New refuses a nil store
// or h, an Options.Source that store cannot take as a message's Source,
// and lease options it cannot honour.
func New(store *idem.Store, h Handler, optFns ...func(*Options)) (BatchHandler, error) {
	var o Options
	for _, fn := range optFns {
		fn(&o)
	}
	c := &consumer{source: o.Source}
	lanes, err := adapt.NewLaneRunner(store, "sqsconsumer", o, adapt.Records[events.SQSMessage, events.SQSMessage]{
		Handle:     h,
		Record:     func(rec events.SQSMessage) events.SQSMessage { return rec },
		Message:    func(rec events.SQSMessage) (idem.Message, error) { return c.message(rec), nil },
		DefaultKey: DefaultKey,
		NoKey:      ErrNoKey,
		NoSource:   errors.New("the record names no queue (its eventSourceARN is empty, or ends before a queue's name) and Options.Source is unset"),
		Name:       func(rec events.SQSMessage) string { return rec.MessageId },
		Stopped:    stopped,
		Span:       span,
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
	src := c.source
	if src == "" {
		src = QueueName(rec.EventSourceARN)
	}
	// The messageId in the log line is what batchItemFailures names.
	// The receive count tells a redelivery from a first delivery: in a
	// redelivery storm only the redeliveries read their claim first.
	attempt, _ := strconv.Atoi(rec.Attributes["ApproximateReceiveCount"])
	return idem.Message{Source: src, Payload: []byte(rec.Body), Attempt: attempt, LogAttrs: []slog.Attr{slog.String("messageId", rec.MessageId)}}
}
