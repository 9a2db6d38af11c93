package localstack

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// Poller emulates a Lambda event source mapping for an SQS queue: it long
// polls the queue, invokes the function with batches of records, deletes
// the records that succeeded and leaves the rest to be received again —
// and, after the queue's maxReceiveCount, moved to its dead-letter queue by
// SQS.
type Poller struct {
	Source  SQSEventSource
	Queue   *Queue
	Client  *sqs.Client
	Invoker Invoker
	Region  string
	// Concurrency is how many batches may be in flight at once.
	Concurrency int
	// RetryDelay is how long a record to retry stays invisible: its
	// visibility timeout is set to this (whole seconds) after the invoke.
	// Negative leaves it invisible for the queue's visibility timeout, as
	// Lambda does.
	RetryDelay time.Duration
	// WaitTime is the long poll's wait, at most 20 seconds.
	WaitTime time.Duration
	// Logf receives one line per batch. Defaults to none.
	Logf func(format string, args ...any)

	batches, records, deleted, retried atomic.Int64
}

// PollerStats count what a poller did.
type PollerStats struct {
	Batches, Records, Deleted, Retried int64
}

// Stats returns the poller's counts so far.
func (p *Poller) Stats() PollerStats {
	return PollerStats{p.batches.Load(), p.records.Load(), p.deleted.Load(), p.retried.Load()}
}

// Run polls until ctx ends, then waits for the batches in flight to finish.
func (p *Poller) Run(ctx context.Context) {
	n := max(p.Concurrency, 1)
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() { p.loop(ctx) })
	}
	wg.Wait()
}

func (p *Poller) loop(ctx context.Context) {
	for ctx.Err() == nil {
		msgs, err := p.receive(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			p.logf("%s: receive from %s: %v", p.Source.Function, p.Queue.Name, err)
			select {
			case <-ctx.Done():
				return
			case <-time.After(time.Second):
			}
			continue
		}
		if len(msgs) > 0 {
			// The batch runs to its end even when ctx ends meanwhile,
			// so that no invoke is cut off half-way.
			p.handle(context.WithoutCancel(ctx), msgs)
		}
	}
}

func (p *Poller) receive(ctx context.Context) ([]sqstypes.Message, error) {
	wait := p.WaitTime
	if wait <= 0 || wait > 20*time.Second {
		wait = 20 * time.Second
	}
	var msgs []sqstypes.Message
	deadline := time.Now().Add(p.Source.BatchingWindow)
	for {
		out, err := p.Client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
			QueueUrl:                    aws.String(p.Queue.URL),
			MaxNumberOfMessages:         int32(min(p.Source.BatchSize-len(msgs), 10)),
			WaitTimeSeconds:             int32(wait / time.Second),
			MessageSystemAttributeNames: []sqstypes.MessageSystemAttributeName{sqstypes.MessageSystemAttributeNameAll},
			MessageAttributeNames:       []string{"All"},
		})
		if err != nil {
			if len(msgs) > 0 && ctx.Err() == nil {
				return msgs, nil
			}
			return msgs, err
		}
		msgs = append(msgs, out.Messages...)
		// A batch larger than one receive is gathered for the batching
		// window, as the event source mapping does.
		if len(msgs) == 0 || len(msgs) >= p.Source.BatchSize || !time.Now().Before(deadline) {
			return msgs, nil
		}
		wait = 0
	}
}

// Event is the Lambda event of a batch of messages.
func (p *Poller) Event(msgs []sqstypes.Message) events.SQSEvent {
	ev := events.SQSEvent{Records: make([]events.SQSMessage, 0, len(msgs))}
	for _, m := range msgs {
		rec := events.SQSMessage{
			MessageId:              aws.ToString(m.MessageId),
			ReceiptHandle:          aws.ToString(m.ReceiptHandle),
			Body:                   aws.ToString(m.Body),
			Md5OfBody:              aws.ToString(m.MD5OfBody),
			Md5OfMessageAttributes: aws.ToString(m.MD5OfMessageAttributes),
			Attributes:             m.Attributes,
			MessageAttributes:      map[string]events.SQSMessageAttribute{},
			EventSourceARN:         p.Queue.ARN,
			EventSource:            "aws:sqs",
			AWSRegion:              p.Region,
		}
		if rec.Attributes == nil {
			rec.Attributes = map[string]string{}
		}
		for k, a := range m.MessageAttributes {
			rec.MessageAttributes[k] = events.SQSMessageAttribute{
				DataType:         aws.ToString(a.DataType),
				StringValue:      a.StringValue,
				BinaryValue:      a.BinaryValue,
				StringListValues: a.StringListValues,
				BinaryListValues: a.BinaryListValues,
			}
		}
		ev.Records = append(ev.Records, rec)
	}
	return ev
}

func (p *Poller) handle(ctx context.Context, msgs []sqstypes.Message) {
	start := time.Now()
	p.batches.Add(1)
	p.records.Add(int64(len(msgs)))
	ev := p.Event(msgs)
	payload, err := json.Marshal(ev)
	var failed map[string]bool
	var why string
	if err == nil {
		var out []byte
		out, err = p.Invoker.Invoke(ctx, p.Source.Function, payload)
		if err == nil && p.Source.ReportBatchItemFailures {
			failed, err = batchItemFailures(out, msgs)
		}
	}
	if err != nil {
		// A function error, or a response Lambda would reject: the whole
		// batch returns to the queue.
		why = err.Error()
		failed = map[string]bool{}
		for _, m := range msgs {
			failed[aws.ToString(m.MessageId)] = true
		}
	}
	var done, retry []sqstypes.Message
	for _, m := range msgs {
		if failed[aws.ToString(m.MessageId)] {
			retry = append(retry, m)
		} else {
			done = append(done, m)
		}
	}
	p.deleteAll(ctx, done)
	p.retryAll(ctx, retry)
	p.deleted.Add(int64(len(done)))
	p.retried.Add(int64(len(retry)))
	line := fmt.Sprintf("%s ← %d record(s) from %s: %d deleted, %d to retry (%v)",
		p.Source.Function, len(msgs), p.Queue.Name, len(done), len(retry), time.Since(start).Round(time.Millisecond))
	if why != "" {
		line += ": " + why
	}
	if maxRC := p.Queue.MaxReceiveCount(); maxRC > 0 {
		for _, m := range retry {
			if n, _ := strconv.Atoi(m.Attributes["ApproximateReceiveCount"]); n >= maxRC {
				line += fmt.Sprintf("; %s failed receive %d of %d: SQS moves it to the dead-letter queue", aws.ToString(m.MessageId), n, maxRC)
			}
		}
	}
	p.logf("%s", line)
}

// batchItemFailures reads a function's partial batch response as Lambda
// does: an empty or null response, or an empty list, is a success; an
// invalid response, or an itemIdentifier that is empty or names no record
// of the batch, fails the whole batch.
func batchItemFailures(out []byte, msgs []sqstypes.Message) (map[string]bool, error) {
	failed := map[string]bool{}
	if len(out) == 0 || string(out) == "null" {
		return failed, nil
	}
	var resp struct {
		BatchItemFailures []map[string]any `json:"batchItemFailures"`
	}
	if err := json.Unmarshal(out, &resp); err != nil {
		return nil, fmt.Errorf("invalid batch response: %w", err)
	}
	ids := map[string]bool{}
	for _, m := range msgs {
		ids[aws.ToString(m.MessageId)] = true
	}
	for _, f := range resp.BatchItemFailures {
		id, _ := f["itemIdentifier"].(string)
		if id == "" || !ids[id] {
			return nil, fmt.Errorf("invalid batch response: itemIdentifier %v names no record of the batch", f["itemIdentifier"])
		}
		failed[id] = true
	}
	return failed, nil
}

func (p *Poller) deleteAll(ctx context.Context, msgs []sqstypes.Message) {
	for chunk := range slices.Chunk(msgs, 10) {
		in := &sqs.DeleteMessageBatchInput{QueueUrl: aws.String(p.Queue.URL)}
		for i, m := range chunk {
			in.Entries = append(in.Entries, sqstypes.DeleteMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(i)), ReceiptHandle: m.ReceiptHandle})
		}
		out, err := p.Client.DeleteMessageBatch(ctx, in)
		if err == nil && len(out.Failed) > 0 {
			err = errors.New(aws.ToString(out.Failed[0].Message))
		}
		if err != nil {
			p.logf("%s: delete from %s: %v", p.Source.Function, p.Queue.Name, err)
		}
	}
}

func (p *Poller) retryAll(ctx context.Context, msgs []sqstypes.Message) {
	if p.RetryDelay < 0 {
		return
	}
	for chunk := range slices.Chunk(msgs, 10) {
		in := &sqs.ChangeMessageVisibilityBatchInput{QueueUrl: aws.String(p.Queue.URL)}
		for i, m := range chunk {
			in.Entries = append(in.Entries, sqstypes.ChangeMessageVisibilityBatchRequestEntry{
				Id: aws.String(strconv.Itoa(i)), ReceiptHandle: m.ReceiptHandle, VisibilityTimeout: int32(p.RetryDelay / time.Second),
			})
		}
		if _, err := p.Client.ChangeMessageVisibilityBatch(ctx, in); err != nil {
			p.logf("%s: change visibility in %s: %v", p.Source.Function, p.Queue.Name, err)
		}
	}
}

func (p *Poller) logf(format string, args ...any) {
	if p.Logf != nil {
		p.Logf(format, args...)
	}
}
