package stream

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/aws/aws-lambda-go/events"
	"go.opentelemetry.io/otel/trace"

	"github.com/idemkit/kit/idem"
	"github.com/idemkit/kit/idem/internal/adapt"
	"github.com/idemkit/kit/idem/internal/seam"
)

// AggregateOptions configure Aggregate. Every default is written once, on
// its field, and applied in Aggregate.
type AggregateOptions struct {
	// Source names the consumer's claims, as ClaimedOptions.Source does.
	// Defaults to the table's name, read from each record's
	// eventSourceARN.
	Source string

	// Logger receives one WARN record per failed batch, naming the first
	// record that failed. Defaults to slog.Default().
	Logger *slog.Logger
}

// Aggregate returns a handler for lambda.Start that brings aggregates up
// to date from a DynamoDB stream, exactly once per record and many records
// per write: for an item hotter than one transaction at a time (a busy
// account's balance), each message commits an entry of its own with its
// claim (never contended), and this consumer of the entries' stream adds
// them up. h describes a record's effect: its increments of the aggregate
// items (idem.Update with expression.Add, no condition). The batch's
// records are claimed under their eventIDs, as Claimed claims them, and
// committed through Store.ProcessBatch, whose transactions carry the
// increments of one item as one action, their sum, beside the records'
// claims: up to 99 records a transaction on one aggregate.
//
// The records of a batch commit in no particular order, so h's effects
// must commute, as increments do. The first record that failed is
// answered as the batch's failure (its SequenceNumber): Lambda retries the
// batch from it, and the records after it that committed come back as
// Duplicates. Set the event source mapping's FunctionResponseTypes to
// ReportBatchItemFailures, and its FilterCriteria to the entries' INSERT
// records.
func Aggregate(store *idem.Store, h func(context.Context, events.DynamoDBEventRecord) (idem.Effect, error), optFns ...func(*AggregateOptions)) (DynamoDBHandler, error) {
	if h == nil {
		return nil, errors.New("stream: Aggregate: nil handler")
	}
	var o AggregateOptions
	for _, fn := range optFns {
		fn(&o)
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	proc, err := adapt.New(store, "AggregateOptions", o.Source, nil)
	if err != nil {
		return nil, fmt.Errorf("stream: Aggregate: %w", err)
	}
	return func(ctx context.Context, ev events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
		resp := events.DynamoDBEventResponse{BatchItemFailures: []events.DynamoDBBatchItemFailure{}}
		failed, err := aggregate(ctx, proc, o.Source, ev.Records, h)
		if err != nil {
			rec := ev.Records[failed]
			o.Logger.LogAttrs(ctx, slog.LevelWarn, "stream: record failed; the batch is retried from it",
				slog.String("eventID", rec.EventID), slog.String("sequenceNumber", rec.Change.SequenceNumber), slog.String("error", err.Error()))
			resp.BatchItemFailures = append(resp.BatchItemFailures, events.DynamoDBBatchItemFailure{ItemIdentifier: rec.Change.SequenceNumber})
		}
		return resp, nil
	}, nil
}

// aggregate commits recs' effects once each and returns the first record
// that failed, and why: every record before it committed (or was
// committed before), so Lambda may checkpoint them.
func aggregate(ctx context.Context, proc *adapt.Processor, source string, recs []events.DynamoDBEventRecord, h func(context.Context, events.DynamoDBEventRecord) (idem.Effect, error)) (int, error) {
	failed, why := len(recs), error(nil)
	msgs := make([]idem.Message, 0, len(recs))
	at := make([]int, 0, len(recs)) // each message's record
	var spans []seam.Span
	for i, rec := range recs {
		msg, err := recordMessage(source, rec)
		if err != nil {
			proc.Fail(ctx, msg, err)
			if i < failed {
				failed, why = i, err
			}
			continue
		}
		msgs, at = append(msgs, msg), append(at, i)
		if proc.Tracing(ctx) {
			spans = append(spans, recordSpan(rec))
		}
	}
	if spans != nil {
		ctx = seam.WithBatchSpans(ctx, spans)
	}
	out := proc.Store.ProcessBatch(ctx, msgs, func(ctx context.Context, j int, _ idem.Message) (idem.Effect, error) {
		return h(ctx, recs[at[j]])
	})
	for j, r := range out {
		if r.Err != nil && at[j] < failed {
			failed, why = at[j], r.Err
		}
	}
	if why == nil {
		return 0, nil
	}
	return failed, why
}

// recordMessage is rec as a Store claims it: under its eventID, its
// payload the SequenceNumber, which belongs to the eventID, so no key
// reuse is looked for.
func recordMessage(source string, rec events.DynamoDBEventRecord) (idem.Message, error) {
	if source == "" {
		source = TableName(rec.EventSourceArn)
	}
	msg := idem.Message{ID: rec.EventID, Source: source, Payload: []byte(rec.Change.SequenceNumber)}
	if msg.ID == "" {
		return msg, fmt.Errorf("stream record %s has no eventID", rec.Change.SequenceNumber)
	}
	return msg, nil
}

// recordSpan names a record's delivery span by OpenTelemetry's FaaS
// conventions: a datasource trigger, the table.
func recordSpan(rec events.DynamoDBEventRecord) seam.Span {
	return seam.Span{Name: "process " + TableName(rec.EventSourceArn), Kind: trace.SpanKindConsumer, Attrs: recordAttrs(rec)}
}
