package main

import (
	"context"
	"encoding/json"
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
	queue, sourceQueue, keyFunc, body string
	source                            sourceFlag
	max                               int
	hold, wait, keyLifetime           time.Duration
	redrive, deleteApplied, yes       bool
	asJSON                            bool
}

func dlqFlags(fs *flag.FlagSet) func(context.Context, *env) error {
	var o dlqOptions
	fs.StringVar(&o.queue, "queue", "", "the dead-letter queue (URL, name or ARN; with -local, its logical id) (required)")
	fs.StringVar(&o.sourceQueue, "source-queue", "", "the source queue of the messages that carry no DeadLetterQueueSourceArn (default: ListDeadLetterSourceQueues's one answer); each other message goes back to the queue it names")
	fs.Var(&o.source, "source", "the claims' Source, the consumer's sqsconsumer.Options.Source: one for every source queue, or per queue, `QUEUE=SOURCE,...` (default: each source queue's name, as sqsconsumer's)")
	fs.StringVar(&o.keyFunc, "key-func", "default", "the consumer's key: default, attribute, dedup, queue-dedup, message-id, or a comma list tried in order (sqsconsumer.FirstKey)")
	fs.StringVar(&o.body, "body", "json", "how the consumer decodes a body: json (sqsconsumer.JSONHandler: a body that is not one JSON value in valid UTF-8 is undecodable, and not redriven) or any (every body is taken)")
	fs.IntVar(&o.max, "max", 100, "read at most this many messages")
	fs.DurationVar(&o.hold, "hold", time.Minute, "how long each message read stays hidden before it is made visible again (at the end, or by SQS if the command dies)")
	fs.DurationVar(&o.wait, "wait", time.Second, "each receive's long poll (0 to 20s); the read ends at the first empty receive")
	fs.DurationVar(&o.keyLifetime, "key-lifetime", 24*time.Hour, "a leased consumer's LeaseOptions.KeyLifetime: a pending claim made longer ago gets no new lease, and stays pending")
	fs.BoolVar(&o.redrive, "redrive", false, "send a copy of each never-applied message back to the queue it came from, and delete it from the DLQ once sent (with --yes); on FIFO, each message group in its order, stopped at its first message that stays in the DLQ")
	fs.BoolVar(&o.deleteApplied, "delete-applied", false, "delete the applied messages from the DLQ (with --yes)")
	fs.BoolVar(&o.yes, "yes", false, "do what -redrive and -delete-applied ask; without it, only show what they would do")
	fs.BoolVar(&o.asJSON, "json", false, "print one JSON object a message instead of the table")
	return func(ctx context.Context, e *env) error { return e.dlq(ctx, o) }
}

// sourceFlag is -source: the claims' Source for every source queue, and
// per queue (by name) where given.
type sourceFlag struct {
	all     string
	byQueue map[string]string
}

func (f *sourceFlag) String() string { return "" }

func (f *sourceFlag) Set(s string) error {
	for entry := range strings.SplitSeq(s, ",") {
		q, src, per := strings.Cut(strings.TrimSpace(entry), "=")
		switch {
		case !per && q != "" && f.all == "":
			f.all = q
		case !per:
			return fmt.Errorf("want one Source, or QUEUE=SOURCE pairs, got %q", s)
		case q == "" || src == "":
			return fmt.Errorf("want QUEUE=SOURCE, got %q", entry)
		default:
			if f.byQueue == nil {
				f.byQueue = map[string]string{}
			}
			f.byQueue[sqsconsumer.QueueName(q)] = src
		}
	}
	return nil
}

// of is the claims' Source of the messages from the queue named name.
func (f *sourceFlag) of(name string) string {
	if s, ok := f.byQueue[name]; ok {
		return s
	}
	if f.all != "" {
		return f.all
	}
	return name
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
	retention      time.Duration // MessageRetentionPeriod
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
	sec, err := strconv.Atoi(a["MessageRetentionPeriod"])
	if err != nil || sec <= 0 {
		sec = 14 * 24 * 3600 // SQS's longest: a marker kept longer harms nothing
	}
	qu.retention = time.Duration(sec) * time.Second
	return qu, nil
}

// deadLetterTarget is the name of the DLQ a redrive policy names.
func deadLetterTarget(policy string) string {
	var p struct {
		Target string `json:"deadLetterTargetArn"`
	}
	if json.Unmarshal([]byte(policy), &p) != nil {
		return ""
	}
	return sqsconsumer.QueueName(p.Target)
}

// routes finds the queue each message came from: the one its
// DeadLetterQueueSourceArn names (SQS sets it on every message it moves
// to a DLQ), else the fallback: -source-queue, else the one queue whose
// redrive policy names the DLQ.
type routes struct {
	e        *env
	o        dlqOptions
	dlq      *queue
	fallback *queue
	how      string   // where fallback came from
	listed   []string // ListDeadLetterSourceQueues's answer
	byARN    map[string]*route
}

// route is a message's source queue and the claims' Source of its
// consumer; q is nil when the queue is unknown, and why says why.
type route struct {
	q      *queue
	how    string
	source string
	why    string
}

// newRoutes lists the DLQ's source queues, refuses a queue that is not a
// DLQ, and opens the fallback.
func (e *env) newRoutes(ctx context.Context, o dlqOptions, dlq *queue) (*routes, error) {
	r := &routes{e: e, o: o, dlq: dlq, byARN: map[string]*route{}}
	out, err := e.sqs.ListDeadLetterSourceQueues(ctx, &sqs.ListDeadLetterSourceQueuesInput{QueueUrl: aws.String(dlq.url)})
	switch {
	case err != nil:
		fmt.Fprintf(e.stderr, "dlq: ListDeadLetterSourceQueues %s: %v; each message goes by its DeadLetterQueueSourceArn or -source-queue\n", dlq.name, err)
	case len(out.QueueUrls) == 0 && dlq.redrivePolicy != "":
		target := deadLetterTarget(dlq.redrivePolicy)
		return nil, usagef("%s is a source queue, not a dead-letter queue: its DLQ is %s (dlq -queue %s)", dlq.name, target, target)
	default:
		r.listed = out.QueueUrls
	}
	switch {
	case o.sourceQueue != "":
		if r.fallback, err = e.openQueue(ctx, o.sourceQueue); err != nil {
			return nil, err
		}
		r.how = "-source-queue"
		if r.fallback.fifo != dlq.fifo {
			return nil, usagef("%s and -source-queue %s are not both FIFO or both standard", dlq.name, r.fallback.name)
		}
	case len(r.listed) == 1:
		if r.fallback, err = e.openQueue(ctx, r.listed[0]); err != nil {
			return nil, err
		}
		r.how = "ListDeadLetterSourceQueues"
	}
	return r, nil
}

// describe says, for the header, where messages go.
func (r *routes) describe() string {
	s := "each message is classed and redriven against the queue its DeadLetterQueueSourceArn names; one without it"
	switch {
	case r.fallback != nil:
		return fmt.Sprintf("%s against %s (from %s)", s, r.fallback.url, r.how)
	case len(r.listed) > 1:
		return fmt.Sprintf("%s is refused: %s serves %d queues (%s); -source-queue names its source", s, r.dlq.name, len(r.listed), strings.Join(r.listed, ", "))
	}
	return s + " is refused: ListDeadLetterSourceQueues names none; -source-queue names its source"
}

// of is m's route.
func (r *routes) of(ctx context.Context, m *dlqMessage) *route {
	arn := m.msg.Attributes["DeadLetterQueueSourceArn"]
	if arn == "" {
		if r.fallback == nil {
			rt := &route{why: "it carries no DeadLetterQueueSourceArn, and " + r.dlq.name + " serves " + plural(len(r.listed), "source queue") + ": -source-queue names its source"}
			if len(r.listed) == 0 && r.o.source.all != "" {
				// Classified by -source alone: never sent anywhere.
				rt.source, rt.how = r.o.source.all, "-source"
			}
			return rt
		}
		return &route{q: r.fallback, how: r.how, source: r.o.source.of(r.fallback.name)}
	}
	if rt, ok := r.byARN[arn]; ok {
		return rt
	}
	rt := &route{how: "DeadLetterQueueSourceArn"}
	q, err := r.e.openQueue(ctx, arn)
	switch {
	case err != nil:
		rt.why = fmt.Sprintf("its source queue %s cannot be opened: %v", sqsconsumer.QueueName(arn), err)
	case q.fifo != r.dlq.fifo:
		rt.why = fmt.Sprintf("its source queue %s and %s are not both FIFO or both standard", q.name, r.dlq.name)
	default:
		rt.q, rt.source = q, r.o.source.of(q.name)
	}
	r.byARN[arn] = rt
	return rt
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
		fmt.Fprintf(e.stderr, "dlq: %s could not be made visible again; SQS shows them again after the -hold\n", plural(failed, "message"))
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
