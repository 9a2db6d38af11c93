package stream

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/idemkit/kit/idem"
	"github.com/idemkit/kit/idem/internal/adapt"
)

// Options configure the batch handlers. Every default is written once, on
// its field, and applied by DynamoDB and Kinesis.
type Options struct {
	// DeadlineMargin is the time kept in hand before the Lambda deadline:
	// no record after the first starts once less remains, and the batch is
	// answered with the first record not run, so that Lambda retries from
	// it instead of timing out the whole batch. The first record always
	// starts, or a function timeout under the margin would stall the
	// shard. Negative turns it off. Defaults to 2 seconds.
	DeadlineMargin time.Duration

	// Logger receives one WARN record per failed batch, naming the record
	// and why. Defaults to slog.Default().
	Logger *slog.Logger
}

func (o *Options) setDefaults() {
	if o.DeadlineMargin == 0 {
		o.DeadlineMargin = 2 * time.Second
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
}

// The handlers DynamoDB, Kinesis and Claimed return, named so that a
// wrapper can say what it takes and gives (sqsconsumer.BatchHandler shows
// one).
type (
	// DynamoDBHandler handles a DynamoDB Streams batch, for lambda.Start.
	DynamoDBHandler func(ctx context.Context, ev events.DynamoDBEvent) (events.DynamoDBEventResponse, error)
	// KinesisHandler handles a Kinesis batch, for lambda.Start.
	KinesisHandler func(ctx context.Context, ev events.KinesisEvent) (events.KinesisEventResponse, error)
	// DynamoDBRecordHandler handles one DynamoDB stream record, for
	// DynamoDB.
	DynamoDBRecordHandler func(ctx context.Context, rec events.DynamoDBEventRecord) error
)

// DynamoDB returns a handler for lambda.Start that runs h for each record
// of a DynamoDB Streams batch, in order, and answers with the first one
// that failed (its SequenceNumber), or none.
func DynamoDB(h DynamoDBRecordHandler, optFns ...func(*Options)) (DynamoDBHandler, error) {
	if h == nil {
		return nil, errors.New("stream: DynamoDB: nil handler")
	}
	o := options(optFns)
	return func(ctx context.Context, ev events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
		resp := events.DynamoDBEventResponse{BatchItemFailures: []events.DynamoDBBatchItemFailure{}}
		if i, err := run(ctx, &o, ev.Records, h); err != nil {
			rec := ev.Records[i]
			o.Logger.LogAttrs(ctx, slog.LevelWarn, "stream: record failed; the batch is retried from it",
				slog.String("eventID", rec.EventID), slog.String("sequenceNumber", rec.Change.SequenceNumber), slog.String("error", err.Error()))
			resp.BatchItemFailures = append(resp.BatchItemFailures, events.DynamoDBBatchItemFailure{ItemIdentifier: rec.Change.SequenceNumber})
		}
		return resp, nil
	}, nil
}

// Kinesis is DynamoDB for a Kinesis stream's batches.
func Kinesis(h func(context.Context, events.KinesisEventRecord) error, optFns ...func(*Options)) (KinesisHandler, error) {
	if h == nil {
		return nil, errors.New("stream: Kinesis: nil handler")
	}
	o := options(optFns)
	return func(ctx context.Context, ev events.KinesisEvent) (events.KinesisEventResponse, error) {
		resp := events.KinesisEventResponse{BatchItemFailures: []events.KinesisBatchItemFailure{}}
		if i, err := run(ctx, &o, ev.Records, h); err != nil {
			rec := ev.Records[i]
			o.Logger.LogAttrs(ctx, slog.LevelWarn, "stream: record failed; the batch is retried from it",
				slog.String("eventID", rec.EventID), slog.String("sequenceNumber", rec.Kinesis.SequenceNumber), slog.String("error", err.Error()))
			resp.BatchItemFailures = append(resp.BatchItemFailures, events.KinesisBatchItemFailure{ItemIdentifier: rec.Kinesis.SequenceNumber})
		}
		return resp, nil
	}, nil
}

func options(optFns []func(*Options)) Options {
	var o Options
	for _, fn := range optFns {
		fn(&o)
	}
	o.setDefaults()
	return o
}

// run runs h on recs in order until one fails, and returns its index and
// why. A panic in h fails its record.
func run[R any](ctx context.Context, o *Options, recs []R, h func(context.Context, R) error) (int, error) {
	for i, rec := range recs {
		if err := mayStart(ctx, o); err != nil && i > 0 {
			return i, err
		}
		if err := adapt.Recover("", "the stream handler", func() error { return h(ctx, rec) }); err != nil {
			return i, err
		}
	}
	return 0, nil
}

func mayStart(ctx context.Context, o *Options) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("%w: %v", idem.ErrDeadline, err)
	}
	if d, ok := ctx.Deadline(); ok && o.DeadlineMargin >= 0 && time.Until(d) <= o.DeadlineMargin {
		return idem.ErrDeadline
	}
	return nil
}
