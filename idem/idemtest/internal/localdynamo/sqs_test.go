package localdynamo_test

import (
	"context"
	"io"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/idemkit/kit/idem/idemtest/internal/localdynamo"
)

// TestSQSAsSQS: what the local SQS does as SQS does and stock moto does
// not. A message moved to its dead-letter queue names its source queue in
// DeadLetterQueueSourceArn (two source queues share the DLQ), and a FIFO
// queue drops a message resent with the deduplication id of one it was
// sent under 5 minutes ago, though that one was moved away since.
func TestSQSAsSQS(t *testing.T) {
	ctx := context.Background()
	srv, err := localdynamo.StartSQS(ctx, func(o *localdynamo.Options) { o.Log = io.Discard })
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Stop() })
	sq := sqs.NewFromConfig(aws.Config{Region: "us-east-1", Credentials: credentials.NewStaticCredentialsProvider("test", "test", "")},
		func(o *sqs.Options) { o.BaseEndpoint = aws.String(srv.Endpoint) })

	create := func(name string, attrs map[string]string) (url, arn string) {
		t.Helper()
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
	receive := func(url string) []sqstypes.Message {
		t.Helper()
		out, err := sq.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), MaxNumberOfMessages: 10,
			MessageSystemAttributeNames: []sqstypes.MessageSystemAttributeName{"All"}})
		if err != nil {
			t.Fatal(err)
		}
		return out.Messages
	}
	send := func(url, body string, fifo bool) {
		t.Helper()
		in := &sqs.SendMessageInput{QueueUrl: aws.String(url), MessageBody: aws.String(body)}
		if fifo {
			in.MessageGroupId, in.MessageDeduplicationId = aws.String("g"), aws.String("d-1")
		}
		if _, err := sq.SendMessage(ctx, in); err != nil {
			t.Fatal(err)
		}
	}
	// deadLetter sends body to url and receives it until it moves on.
	deadLetter := func(url, body string, fifo bool) {
		t.Helper()
		send(url, body, fifo)
		for range 3 {
			receive(url)
		}
	}
	policy := func(dlqARN string) map[string]string {
		// A receive's VisibilityTimeout 0 is the SDK's zero value, not sent:
		// the queue's own hides nothing.
		return map[string]string{"VisibilityTimeout": "0", "RedrivePolicy": `{"deadLetterTargetArn":"` + dlqARN + `","maxReceiveCount":"1"}`}
	}

	t.Run("DeadLetterQueueSourceArn", func(t *testing.T) {
		dlq, dlqARN := create("shared-dlq", nil)
		credits, creditsARN := create("credits", policy(dlqARN))
		refunds, refundsARN := create("refunds", policy(dlqARN))
		deadLetter(credits, "a credit", false)
		deadLetter(refunds, "a refund", false)
		got := map[string]string{}
		for _, m := range receive(dlq) {
			got[aws.ToString(m.Body)] = m.Attributes["DeadLetterQueueSourceArn"]
		}
		if got["a credit"] != creditsARN || got["a refund"] != refundsARN || len(got) != 2 {
			t.Errorf("expect each message to name its source queue (%s, %s), got %v", creditsARN, refundsARN, got)
		}
	})

	t.Run("FIFO deduplication outlives a move", func(t *testing.T) {
		fifo := map[string]string{"FifoQueue": "true"}
		dlq, dlqARN := create("dedup-dlq.fifo", fifo)
		attrs := policy(dlqARN)
		attrs["FifoQueue"] = "true"
		src, _ := create("dedup.fifo", attrs)
		deadLetter(src, "first", true)
		if got := receive(dlq); len(got) != 1 || aws.ToString(got[0].Body) != "first" {
			t.Fatalf("expect the message in the DLQ, got %v", got)
		}
		send(src, "again", true) // the same group and deduplication id, at once
		if got := receive(src); len(got) != 0 {
			t.Errorf("expect the resend dropped within 5 minutes, got %d message(s): %v", len(got), aws.ToString(got[0].Body))
		}
	})
}
