package outbox

import (
	"context"
	"errors"
	"fmt"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/trace"
	"log/slog"
	"runtime/debug"
	"slices"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
)

// SQSAPI is the call the relay sends to SQS with. *sqs.Client
// implements it.
type SQSAPI interface {
	SendMessageBatch(ctx context.Context, params *sqs.SendMessageBatchInput, optFns ...func(*sqs.Options)) (*sqs.SendMessageBatchOutput, error)
}

// EventBridgeAPI is the call the relay puts events with.
// *eventbridge.Client implements it.
type EventBridgeAPI interface {
	PutEvents(ctx context.Context, params *eventbridge.PutEventsInput, optFns ...func(*eventbridge.Options)) (*eventbridge.PutEventsOutput, error)
}

// Options configure a Relay. Every default is written once, on its field,
// and applied in New.
type Options struct {
	// SQS sends to queues. A message for a queue fails while it is nil.
	// At least one of SQS and EventBridge is required.
	SQS SQSAPI

	// EventBridge puts events on buses. A message for a bus fails while
	// it is nil.
	EventBridge EventBridgeAPI

	// EventSource is the Source of the events put on EventBridge.
	// Defaults to "idemkit.outbox".
	EventSource string

	// DeadlineMargin is the time kept in hand before the Lambda deadline:
	// no send after the first starts once less remains, and the batch is
	// answered with the first record not sent. Negative turns it off.
	// Defaults to 2 seconds.
	DeadlineMargin time.Duration

	// Concurrency is how many of a batch's calls (SendMessageBatch,
	// PutEvents) may be in flight at once; 1 sends them one after
	// another. Whatever it is, a FIFO message group's calls go one at a
	// time, in stream order (see the package doc). Defaults to 10: the
	// 10 calls of a 100-record batch to one queue go out together.
	Concurrency int

	// Logger receives a WARN record for each batch answered with a
	// failure, and an ERROR record for an outbox item that cannot be
	// sent as it is. Defaults to slog.Default().
	Logger *slog.Logger

	// TracerProvider makes a send span for each message, a child of the
	// trace its committing delivery stored with it. Defaults to
	// OpenTelemetry's global one, which makes none until a program
	// installs one; the stored trace is carried on to the consumer either
	// way.
	TracerProvider trace.TracerProvider
}

// Relay sends outbox items from a DynamoDB stream.
type Relay struct {
	o      Options
	tracer trace.Tracer
}

// New returns a Relay.
func New(optFns ...func(*Options)) (*Relay, error) {
	var o Options
	for _, fn := range optFns {
		fn(&o)
	}
	if o.SQS == nil && o.EventBridge == nil {
		return nil, errors.New("outbox: New: neither an SQS nor an EventBridge client: Options.SQS or Options.EventBridge is required")
	}
	if o.EventSource == "" {
		o.EventSource = "idemkit.outbox"
	}
	if o.DeadlineMargin == 0 {
		o.DeadlineMargin = 2 * time.Second
	}
	if o.Concurrency == 0 {
		o.Concurrency = 10
	}
	if o.Concurrency < 0 {
		return nil, fmt.Errorf("outbox: New: Options.Concurrency is %d: at least 1 calls are in flight at once", o.Concurrency)
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.TracerProvider == nil {
		o.TracerProvider = otel.GetTracerProvider()
	}
	return &Relay{o: o, tracer: o.TracerProvider.Tracer("github.com/idemkit/kit/idem/outbox")}, nil
}

// SendError reports an outbox item its destination did not take.
type SendError struct {
	ID          string // the outbox id
	Destination string
	Code        string // the service's error code, when it answered one
	// SenderFault says the service refused the message itself (access
	// denied, no such queue, an invalid message): retries will not send
	// it, and it will reach the relay's on-failure destination.
	SenderFault bool
	Err         error
}

func (e *SendError) Error() string {
	return fmt.Sprintf("outbox: %s to %s: %v", e.ID, e.Destination, e.Err)
}

func (e *SendError) Unwrap() error { return e.Err }

// Handle sends each new outbox item of ev, batching consecutive items
// bound for one destination (up to 10 a call), up to Options.Concurrency
// calls at once, and answers with the first record, in stream order, not
// sent: every record before it was. Lambda checkpoints those and retries
// from it, so the items after it are sent again, including any a call in
// flight at the failure had sent.
func (r *Relay) Handle(ctx context.Context, ev events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
	resp := events.DynamoDBEventResponse{BatchItemFailures: []events.DynamoDBBatchItemFailure{}}
	if i, err := r.relay(ctx, ev.Records); err != nil {
		rec := ev.Records[i]
		level := slog.LevelWarn
		var bad *badItemError
		var se *SendError
		if errors.As(err, &bad) || (errors.As(err, &se) && se.SenderFault) {
			// No retry mends it: it will end at the on-failure destination.
			level = slog.LevelError
		}
		r.o.Logger.LogAttrs(ctx, level, "outbox: record not sent; the batch is retried from it",
			slog.String("eventID", rec.EventID), slog.String("sequenceNumber", rec.Change.SequenceNumber), slog.String("error", err.Error()))
		resp.BatchItemFailures = append(resp.BatchItemFailures, events.DynamoDBBatchItemFailure{ItemIdentifier: rec.Change.SequenceNumber})
	}
	return resp, nil
}

// badItemError is a record the relay cannot read as an outbox item, or
// whose send panicked: it is failed, so that Lambda's retries end at the
// on-failure destination.
type badItemError struct{ err error }

func (e *badItemError) Error() string { return e.err.Error() }
func (e *badItemError) Unwrap() error { return e.err }

// maxBatchEntries and maxBatchBytes are SendMessageBatch's and PutEvents'
// limits per call: 10 entries, 256 KiB in all.
const (
	maxBatchEntries = 10
	maxBatchBytes   = 256 << 10
)

// relay sends recs' items; on failure, i is the first record not sent,
// and every record before it was sent.
func (r *Relay) relay(ctx context.Context, recs []events.DynamoDBEventRecord) (int, error) {
	chunks, bad, badErr := readChunks(recs)
	// Every chunk lies before the unreadable record, so any failure among
	// them comes first.
	if i, err := r.sendChunks(ctx, chunks); err != nil {
		return i, err
	}
	if badErr != nil {
		return bad, badErr
	}
	return 0, nil
}

// chunk is consecutive outbox items bound for one destination, up to a
// call's limits: one SendMessageBatch or PutEvents.
type chunk struct {
	recs  []int // each item's record index, ascending
	items []item
	// after are the earlier chunks holding items of a FIFO message group
	// this one holds: it is sent only once they all were (sendChunks).
	after []int
}

// readChunks reads recs up to the first record that cannot be read, bad,
// whose error is badErr, and cuts the items before it into chunks, in
// stream order.
func readChunks(recs []events.DynamoDBEventRecord) (chunks []chunk, bad int, badErr error) {
	size := 0                // the last chunk's, in bytes
	last := map[string]int{} // a FIFO group's last chunk so far
	for i, rec := range recs {
		it, err := readOne(rec)
		if errors.Is(err, errNotOutbox) {
			continue
		}
		if err != nil {
			return chunks, i, &badItemError{err}
		}
		n := len(it.body) + len(it.typ) + 200
		for k, v := range it.attributes {
			n += len(k) + len(v)
		}
		if c := len(chunks) - 1; c < 0 || chunks[c].items[0].destination != it.destination || len(chunks[c].items) == maxBatchEntries || size+n > maxBatchBytes {
			chunks, size = append(chunks, chunk{}), 0
		}
		c := len(chunks) - 1
		chunks[c].recs, chunks[c].items = append(chunks[c].recs, i), append(chunks[c].items, it)
		size += n
		if isFIFO(it.destination) {
			// The group as SQS will name it, on this queue.
			g := it.destination + "\x00" + groupID(it.group)
			if prev, ok := last[g]; ok && prev != c && !slices.Contains(chunks[c].after, prev) {
				chunks[c].after = append(chunks[c].after, prev)
			}
			last[g] = c
		}
	}
	return chunks, 0, nil
}

// readOne is readItem with a panic, which no record should cause, made
// the record's failure: one bad record must not crash the invoke and have
// the whole batch sent again.
func readOne(rec events.DynamoDBEventRecord) (it item, err error) {
	defer func() {
		if v := recover(); v != nil {
			err = fmt.Errorf("outbox: reading record %s panicked: %v\n%s", rec.EventID, v, debug.Stack())
		}
	}()
	return readItem(rec)
}

// nearDeadline stops a send that would start inside the deadline margin,
// unless nothing was sent yet, so that a short timeout cannot stall the
// shard.
func (r *Relay) nearDeadline(ctx context.Context, sent bool) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if d, ok := ctx.Deadline(); ok && sent && r.o.DeadlineMargin > 0 && time.Until(d) < r.o.DeadlineMargin {
		return errors.New("outbox: not sent: the deadline is near")
	}
	return nil
}

// callContext bounds one send by half the margin before the deadline: a
// send that hangs then fails its own records, answered in time, instead of
// timing out the invoke and having the whole batch sent again.
func (r *Relay) callContext(ctx context.Context) (context.Context, context.CancelFunc) {
	d, ok := ctx.Deadline()
	if !ok || r.o.DeadlineMargin <= 0 {
		return ctx, func() {}
	}
	if cut := d.Add(-r.o.DeadlineMargin / 2); time.Until(cut) > 100*time.Millisecond {
		return context.WithDeadline(ctx, cut)
	}
	return ctx, func() {}
}
