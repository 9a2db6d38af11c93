package main

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/idemkit/kit/idem"
	"github.com/idemkit/kit/idem/idemtest"
	"github.com/idemkit/kit/idem/sqsconsumer"
)

// faultSQS points the command's SQS client at f in front of the local SQS
// until the test ends or heal is called.
func (f *fixture) faultSQS(t *testing.T, faults *idemtest.Faults) (heal func()) {
	t.Helper()
	t.Setenv("AWS_ENDPOINT_URL_SQS", faultProxy(t, sqsServer.srv.Endpoint, faults))
	return func() { t.Setenv("AWS_ENDPOINT_URL_SQS", sqsServer.srv.Endpoint) }
}

// deadLetters is a dead-letter queue behind source queues on the local
// SQS, which moves a message there on its first receive after one
// (maxReceiveCount 1) and stamps it with DeadLetterQueueSourceArn, as SQS
// does.
type deadLetters struct {
	sq       *sqs.Client
	fifo     bool
	dlq      string            // URL
	url, arn map[string]string // by the source queue's name
	names    map[string]string // the source queues' names, by the test's short name
}

func newDeadLetters(t *testing.T, sq *sqs.Client, fifo bool, sources ...string) *deadLetters {
	t.Helper()
	ctx := context.Background()
	suffix := strconv.FormatInt(time.Now().UnixNano(), 36)
	d := &deadLetters{sq: sq, fifo: fifo, url: map[string]string{}, arn: map[string]string{}, names: map[string]string{}}
	create := func(name string, attrs map[string]string) (string, string) {
		t.Helper()
		if fifo {
			name += ".fifo"
			attrs["FifoQueue"] = "true"
		}
		out, err := sq.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(name), Attributes: attrs})
		if err != nil {
			t.Fatal(err)
		}
		a, err := sq.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: out.QueueUrl, AttributeNames: []sqstypes.QueueAttributeName{"QueueArn"}})
		if err != nil {
			t.Fatal(err)
		}
		return aws.ToString(out.QueueUrl), a.Attributes["QueueArn"]
	}
	dlq, dlqARN := create("dlq-"+suffix, map[string]string{})
	d.dlq = dlq
	for _, s := range sources {
		// A receive's VisibilityTimeout 0 is the SDK's zero value, never
		// sent: the queue's own hides nothing, so a failed receive is
		// visible again at once.
		url, arn := create(s+"-"+suffix, map[string]string{"VisibilityTimeout": "0",
			"RedrivePolicy": `{"deadLetterTargetArn":"` + dlqARN + `","maxReceiveCount":"1"}`})
		name := sqsconsumer.QueueName(arn)
		d.names[s], d.url[name], d.arn[name] = name, url, arn
	}
	return d
}

func stringAttrs(attrs map[string]string) map[string]sqstypes.MessageAttributeValue {
	m := map[string]sqstypes.MessageAttributeValue{}
	for k, v := range attrs {
		m[k] = sqstypes.MessageAttributeValue{DataType: aws.String("String"), StringValue: aws.String(v)}
	}
	return m
}

// fail sends body to the source queue s and receives it until SQS moves
// it to the DLQ, as a consumer that fails it does; it returns its
// messageId.
func (d *deadLetters) fail(t *testing.T, s, body string, attrs map[string]string, group, dedup string) string {
	t.Helper()
	ctx := context.Background()
	url := d.url[d.names[s]]
	in := &sqs.SendMessageInput{QueueUrl: aws.String(url), MessageBody: aws.String(body), MessageAttributes: stringAttrs(attrs)}
	if group != "" {
		in.MessageGroupId, in.MessageDeduplicationId = aws.String(group), aws.String(dedup)
	}
	out, err := d.sq.SendMessage(ctx, in)
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if _, err := d.sq.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), MaxNumberOfMessages: 10}); err != nil {
			t.Fatal(err)
		}
	}
	return aws.ToString(out.MessageId)
}

// put sends a message to the DLQ itself, as a person or a tool might: it
// carries no DeadLetterQueueSourceArn.
func (d *deadLetters) put(t *testing.T, body string, attrs map[string]string) {
	t.Helper()
	if _, err := d.sq.SendMessage(context.Background(), &sqs.SendMessageInput{QueueUrl: aws.String(d.dlq), MessageBody: aws.String(body), MessageAttributes: stringAttrs(attrs)}); err != nil {
		t.Fatal(err)
	}
}

// received receives (and deletes) every message of the source queue s,
// as events the consumer of s would be handed.
func (d *deadLetters) received(t *testing.T, s string) []events.SQSMessage {
	t.Helper()
	name := d.names[s]
	var recs []events.SQSMessage
	for _, m := range (queues{sq: d.sq}).drain(t, d.url[name]) {
		recs = append(recs, idemtest.Received(m, d.arn[name]))
	}
	return recs
}

// depth is the DLQ's visible messages, none held.
func (d *deadLetters) depth(t *testing.T) int {
	t.Helper()
	v, h := (queues{sq: d.sq}).depth(t, d.dlq)
	if h != 0 {
		t.Errorf("DLQ: expect none held, got %d", h)
	}
	return v
}

// creditBody is a credit as the tests' consumers decode it.
type creditBody struct {
	Account string `json:"account"`
	Cents   int64  `json:"cents"`
}

// consumeCredits runs recs through an sqsconsumer handler that credits
// the fixture's accounts table, keyed and sourced as optFns say, and
// fails the test if any record fails.
func (f *fixture) consumeCredits(t *testing.T, recs []events.SQSMessage, optFns ...func(*sqsconsumer.Options)) {
	t.Helper()
	h, err := sqsconsumer.New(f.store(time.Time{}), sqsconsumer.JSONHandler(func(_ context.Context, c creditBody, _ events.SQSMessage) (idem.Effect, error) {
		w, err := idem.Update(f.Accounts, map[string]string{"account": c.Account}, expression.Add(expression.Name("balance"), expression.Value(c.Cents)))
		return idem.Effect{Writes: []types.TransactWriteItem{w}}, err
	}), optFns...)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := h(context.Background(), events.SQSEvent{Records: recs})
	if err != nil || len(resp.BatchItemFailures) != 0 {
		t.Fatalf("consume: %v, failures %v", err, resp.BatchItemFailures)
	}
}
