package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/idemkit/kit/idem/sqsconsumer"
)

type dlqOptions struct {
	queue, sourceQueue, source, keyFunc string
	max                                 int
	hold, wait                          time.Duration
	redrive, deleteApplied, yes, asJSON bool
}

func dlqFlags(fs *flag.FlagSet) func(context.Context, *env) error {
	var o dlqOptions
	fs.StringVar(&o.queue, "queue", "", "the dead-letter queue (URL, name or ARN; with -local, its logical id) (required)")
	fs.StringVar(&o.sourceQueue, "source-queue", "", "the queue the DLQ drains, where -redrive sends (default: ListDeadLetterSourceQueues's one answer)")
	fs.StringVar(&o.source, "source", "", "the claims' Source: the consumer's sqsconsumer.Options.Source (default: the source queue's name, as sqsconsumer's)")
	fs.StringVar(&o.keyFunc, "key-func", "default", "the consumer's key: default, attribute, dedup, queue-dedup, message-id, or a comma list tried in order (sqsconsumer.FirstKey)")
	fs.IntVar(&o.max, "max", 100, "read at most this many messages")
	fs.DurationVar(&o.hold, "hold", time.Minute, "how long each message read stays hidden before it is made visible again (at the end, or by SQS if the command dies)")
	fs.DurationVar(&o.wait, "wait", time.Second, "each receive's long poll (0 to 20s); the read ends at the first empty receive")
	fs.BoolVar(&o.redrive, "redrive", false, "send the never-applied messages back to the source queue, and delete them from the DLQ once sent (with --yes)")
	fs.BoolVar(&o.deleteApplied, "delete-applied", false, "delete the applied messages from the DLQ (with --yes)")
	fs.BoolVar(&o.yes, "yes", false, "do what -redrive and -delete-applied ask; without it, only show what they would do")
	fs.BoolVar(&o.asJSON, "json", false, "print one JSON object a message instead of the table")
	return func(ctx context.Context, e *env) error { return e.dlq(ctx, o) }
}

// keyFuncs are the consumer's key functions by name: sqsconsumer's own,
// never a copy, so a message is keyed here as the adapter keyed it.
var keyFuncs = map[string]sqsconsumer.KeyFunc{
	"default":     sqsconsumer.DefaultKey,
	"attribute":   sqsconsumer.AttributeKey,
	"dedup":       sqsconsumer.DeduplicationKey,
	"queue-dedup": sqsconsumer.QueueDeduplicationKey,
	"message-id":  sqsconsumer.MessageIDKey,
}

func keyFunc(spec string) (sqsconsumer.KeyFunc, error) {
	var fns []sqsconsumer.KeyFunc
	for name := range strings.SplitSeq(spec, ",") {
		fn, ok := keyFuncs[strings.TrimSpace(name)]
		if !ok {
			return nil, usagef("-key-func %q: want default, attribute, dedup, queue-dedup or message-id, or a comma list of them", spec)
		}
		fns = append(fns, fn)
	}
	if len(fns) == 1 {
		return fns[0], nil
	}
	return sqsconsumer.FirstKey(fns...), nil
}

// queue is a queue's URL and the attributes dlq reads.
type queue struct {
	url, arn, name string
	fifo           bool
	visible, held  int
	redrivePolicy  string
}

// openQueue finds q (a URL, a name, an ARN, or -local's logical id) and
// reads its attributes.
func (e *env) openQueue(ctx context.Context, q string) (*queue, error) {
	url := q
	if e.local != nil && e.local.Queues[q] != "" {
		url = e.local.Queues[q]
	}
	if !strings.Contains(url, "://") {
		in := &sqs.GetQueueUrlInput{QueueName: aws.String(sqsconsumer.QueueName(url))}
		if parts := strings.Split(url, ":"); len(parts) == 6 && parts[0] == "arn" {
			in.QueueOwnerAWSAccountId = aws.String(parts[4])
		}
		out, err := e.sqs.GetQueueUrl(ctx, in)
		var missing *sqstypes.QueueDoesNotExist
		if errors.As(err, &missing) {
			return nil, failf("no queue %q here (the Region, the account, the endpoint?)", q)
		}
		if err != nil {
			return nil, fmt.Errorf("GetQueueUrl %s: %w", q, err)
		}
		url = aws.ToString(out.QueueUrl)
	}
	out, err := e.sqs.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: aws.String(url), AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameAll}})
	var missing *sqstypes.QueueDoesNotExist
	if errors.As(err, &missing) {
		return nil, failf("no queue at %s", url)
	}
	if err != nil {
		return nil, fmt.Errorf("GetQueueAttributes %s: %w", url, err)
	}
	a := out.Attributes
	qu := &queue{url: url, arn: a["QueueArn"], fifo: a["FifoQueue"] == "true", redrivePolicy: a["RedrivePolicy"]}
	qu.name = sqsconsumer.QueueName(qu.arn)
	qu.visible, _ = strconv.Atoi(a["ApproximateNumberOfMessages"])
	qu.held, _ = strconv.Atoi(a["ApproximateNumberOfMessagesNotVisible"])
	return qu, nil
}

// sourceQueue is the queue the DLQ drains: -source-queue, else the one
// queue whose redrive policy names the DLQ; nil when that is not one.
func (e *env) sourceQueue(ctx context.Context, o dlqOptions, dlq *queue) (*queue, string, error) {
	if o.sourceQueue != "" {
		q, err := e.openQueue(ctx, o.sourceQueue)
		return q, "-source-queue", err
	}
	out, err := e.sqs.ListDeadLetterSourceQueues(ctx, &sqs.ListDeadLetterSourceQueuesInput{QueueUrl: aws.String(dlq.url)})
	switch {
	case err != nil && !o.redrive && o.source != "":
		// Not needed to classify when -source names the claims' Source.
		fmt.Fprintf(e.stderr, "dlq: the source queue is unknown (ListDeadLetterSourceQueues: %v); classifying by -source %q\n", err, o.source)
		return nil, "", nil
	case err != nil:
		return nil, "", fmt.Errorf("ListDeadLetterSourceQueues %s: %w", dlq.url, err)
	}
	if len(out.QueueUrls) != 1 {
		if o.redrive || o.source == "" {
			what := "names none"
			if len(out.QueueUrls) > 1 {
				what = "names " + strings.Join(out.QueueUrls, ", ")
			}
			return nil, "", usagef("cannot tell which queue %s drains: ListDeadLetterSourceQueues %s; pass -source-queue (and -source when the consumer sets its own)", dlq.name, what)
		}
		return nil, "", nil
	}
	q, err := e.openQueue(ctx, out.QueueUrls[0])
	return q, "ListDeadLetterSourceQueues", err
}

// read receives up to max messages from dlq, each hidden for hold so that
// the next receive returns others; the caller makes them visible again.
// It stops at the first empty receive, or when a message comes back (the
// hold elapsed).
func (e *env) read(ctx context.Context, dlq *queue, o dlqOptions) ([]*dlqMessage, error) {
	var msgs []*dlqMessage
	seen := map[string]bool{}
	for len(msgs) < o.max {
		out, err := e.sqs.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(dlq.url),
			MaxNumberOfMessages: int32(min(10, o.max-len(msgs))), VisibilityTimeout: int32(o.hold / time.Second),
			WaitTimeSeconds: int32(o.wait / time.Second), MessageAttributeNames: []string{"All"},
			MessageSystemAttributeNames: []sqstypes.MessageSystemAttributeName{sqstypes.MessageSystemAttributeNameAll}})
		if err != nil {
			return msgs, fmt.Errorf("ReceiveMessage %s: %w", dlq.url, err)
		}
		if len(out.Messages) == 0 {
			break
		}
		again := false
		for _, m := range out.Messages {
			id := aws.ToString(m.MessageId)
			if seen[id] {
				again = true
				// The newest receipt handle is the one that works.
				i := slices.IndexFunc(msgs, func(d *dlqMessage) bool { return d.MessageID == id })
				msgs[i].msg.ReceiptHandle = m.ReceiptHandle
				continue
			}
			seen[id] = true
			msgs = append(msgs, newDLQMessage(m))
		}
		if again {
			fmt.Fprintf(e.stderr, "dlq: a message came back while reading: the -hold (%v) elapsed; the read stops at %d messages\n", o.hold, len(msgs))
			break
		}
	}
	return msgs, nil
}

// restore makes every message still held visible again at once.
func (e *env) restore(ctx context.Context, dlq *queue, msgs []*dlqMessage) {
	var entries []sqstypes.ChangeMessageVisibilityBatchRequestEntry
	for i, m := range msgs {
		if !m.deleted {
			entries = append(entries, sqstypes.ChangeMessageVisibilityBatchRequestEntry{Id: aws.String(strconv.Itoa(i)), ReceiptHandle: m.msg.ReceiptHandle})
		}
	}
	failed := 0
	for batch := range slices.Chunk(entries, 10) {
		out, err := e.sqs.ChangeMessageVisibilityBatch(ctx, &sqs.ChangeMessageVisibilityBatchInput{QueueUrl: aws.String(dlq.url), Entries: batch})
		switch {
		case err != nil:
			failed += len(batch)
		default:
			failed += len(out.Failed)
		}
	}
	if failed > 0 {
		fmt.Fprintf(e.stderr, "dlq: %d message(s) could not be made visible again; SQS shows them again after the -hold\n", failed)
	}
}

// newDLQMessage is m, received, as Lambda's event source mapping hands a
// message to sqsconsumer (idemtest.Received builds it the same way).
func newDLQMessage(m sqstypes.Message) *dlqMessage {
	d := &dlqMessage{msg: m, MessageID: aws.ToString(m.MessageId)}
	d.rec = events.SQSMessage{MessageId: d.MessageID, ReceiptHandle: aws.ToString(m.ReceiptHandle), Body: aws.ToString(m.Body),
		Md5OfBody: aws.ToString(m.MD5OfBody), Attributes: m.Attributes, MessageAttributes: map[string]events.SQSMessageAttribute{},
		EventSource: "aws:sqs"}
	for k, v := range m.MessageAttributes {
		d.rec.MessageAttributes[k] = events.SQSMessageAttribute{DataType: aws.ToString(v.DataType), StringValue: v.StringValue, BinaryValue: v.BinaryValue}
	}
	d.ReceiveCount, _ = strconv.Atoi(m.Attributes["ApproximateReceiveCount"])
	if ms, err := strconv.ParseInt(m.Attributes["SentTimestamp"], 10, 64); err == nil {
		d.SentAt = time.UnixMilli(ms).UTC()
	}
	d.Group, d.DedupID = m.Attributes["MessageGroupId"], m.Attributes["MessageDeduplicationId"]
	return d
}
