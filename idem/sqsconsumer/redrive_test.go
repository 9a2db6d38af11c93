package sqsconsumer_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/idemkit/kit/idem"
	"github.com/idemkit/kit/idem/idemtest"
	"github.com/idemkit/kit/idem/sqsconsumer"
)

// localSQS is the local SQS server, started on first use and stopped with
// the test binary.
var localSQS struct {
	once sync.Once
	srv  *idemtest.Server
	err  error
}

func sqsClient(t *testing.T) *sqs.Client {
	t.Helper()
	localSQS.once.Do(func() {
		localSQS.srv, localSQS.err = idemtest.StartSQS(context.Background(), func(o *idemtest.ServerOptions) { o.Log = io.Discard })
	})
	if localSQS.err != nil {
		t.Fatal(localSQS.err)
	}
	return sqs.NewFromConfig(aws.Config{Region: "us-east-1", Credentials: credentials.NewStaticCredentialsProvider("test", "test", "")},
		func(o *sqs.Options) { o.BaseEndpoint = aws.String(localSQS.srv.Endpoint) })
}

// TestRedriveKeyedAsOriginal: a message keyed by its messageId (standard
// queue) or its deduplication id (FIFO), applied, then sent again as a
// redrive sends it: a new messageId and, on FIFO, a deduplication id of
// its own, which SQS delivers within the 5 minutes it drops the
// original's; the original's in the redrive attributes. Through the local
// SQS and DynamoDB the copy is keyed as the original was: a Duplicate,
// applied once.
func TestRedriveKeyedAsOriginal(t *testing.T) {
	ctx := context.Background()
	sq := sqsClient(t)
	for _, fifo := range []bool{false, true} {
		name := "standard"
		if fifo {
			name = "fifo"
		}
		t.Run(name, func(t *testing.T) {
			e := newEnv(t)
			qname, attrs := "redrive-"+strings.ToLower(t.Name()[len("TestRedriveKeyedAsOriginal/"):]), map[string]string{}
			if fifo {
				qname, attrs["FifoQueue"] = qname+".fifo", "true"
			}
			q, err := sq.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(qname), Attributes: attrs})
			if err != nil {
				t.Fatal(err)
			}
			arn := "arn:aws:sqs:us-east-1:123456789012:" + qname
			send := func(in *sqs.SendMessageInput) {
				t.Helper()
				in.QueueUrl, in.MessageBody = q.QueueUrl, aws.String(`{"account":"acc-1","cents":100}`)
				if fifo {
					in.MessageGroupId = aws.String("acc-1")
				}
				if _, err := sq.SendMessage(ctx, in); err != nil {
					t.Fatal(err)
				}
			}
			receive := func() events.SQSMessage {
				t.Helper()
				out, err := sq.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: q.QueueUrl, MaxNumberOfMessages: 10,
					MessageAttributeNames: []string{"All"}, MessageSystemAttributeNames: []sqstypes.MessageSystemAttributeName{"All"}})
				if err != nil {
					t.Fatal(err)
				}
				if len(out.Messages) != 1 {
					t.Fatalf("expect one message delivered, got %d", len(out.Messages))
				}
				if _, err := sq.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: q.QueueUrl, ReceiptHandle: out.Messages[0].ReceiptHandle}); err != nil {
					t.Fatal(err)
				}
				return idemtest.Received(out.Messages[0], arn)
			}

			orig := &sqs.SendMessageInput{}
			if fifo {
				orig.MessageDeduplicationId = aws.String("d-1")
			}
			send(orig)
			first := receive()
			checkFailed(t, e.run(t, ctx, []events.SQSMessage{first}))

			str := func(v string) sqstypes.MessageAttributeValue {
				return sqstypes.MessageAttributeValue{DataType: aws.String("String"), StringValue: aws.String(v)}
			}
			cp := &sqs.SendMessageInput{MessageAttributes: map[string]sqstypes.MessageAttributeValue{
				sqsconsumer.RedriveMessageIDAttribute: str(first.MessageId)}}
			if fifo {
				cp.MessageDeduplicationId = aws.String("redrive-" + first.MessageId)
				cp.MessageAttributes[sqsconsumer.RedriveDeduplicationIDAttribute] = str("d-1")
			}
			send(cp)
			copied := receive()
			if copied.MessageId == first.MessageId {
				t.Fatal("expect the copy to have a messageId of its own")
			}
			checkFailed(t, e.run(t, ctx, []events.SQSMessage{copied}))
			checkOutcomes(t, e.outcomes(t), map[idem.Outcome]int{idem.Processed: 1, idem.Duplicate: 1})
			e.checkBalances(t, map[string]int{"acc-1": 100})
			if n := e.Claims(t); n != 1 {
				t.Errorf("expect one claim, got %d", n)
			}
		})
	}
}

// TestRedriveAttributes: the redrive attributes stand for the original's
// messageId and deduplication id, and only as what they name.
func TestRedriveAttributes(t *testing.T) {
	const orig = "5fea7756-0ea4-451a-a703-a558b933e274"
	attrs := func(kv ...string) map[string]events.SQSMessageAttribute {
		m := map[string]events.SQSMessageAttribute{}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i]] = events.SQSMessageAttribute{DataType: "String", StringValue: aws.String(kv[i+1])}
		}
		return m
	}
	fifo := map[string]string{"MessageGroupId": "g", "MessageDeduplicationId": "redrive-x"}
	for _, tc := range []struct {
		name  string
		fn    sqsconsumer.KeyFunc
		rec   events.SQSMessage
		want  string
		error string
	}{
		{"messageId: the original's", sqsconsumer.MessageIDKey, events.SQSMessage{MessageId: "m-2", MessageAttributes: attrs(sqsconsumer.RedriveMessageIDAttribute, orig)}, orig, ""},
		{"messageId: DefaultKey falls to it", sqsconsumer.DefaultKey, events.SQSMessage{MessageId: "m-2", MessageAttributes: attrs(sqsconsumer.RedriveMessageIDAttribute, orig)}, orig, ""},
		{"messageId: an IdempotencyKey still comes first", sqsconsumer.DefaultKey, events.SQSMessage{MessageId: "m-2", MessageAttributes: attrs(sqsconsumer.RedriveMessageIDAttribute, orig, sqsconsumer.KeyAttribute, "evt_1")}, "evt_1", ""},
		{"messageId: not a UUID", sqsconsumer.MessageIDKey, events.SQSMessage{MessageId: "m-2", MessageAttributes: attrs(sqsconsumer.RedriveMessageIDAttribute, "evt_1")}, "", "is not a messageId"},
		{"messageId: empty", sqsconsumer.MessageIDKey, events.SQSMessage{MessageId: "m-2", MessageAttributes: attrs(sqsconsumer.RedriveMessageIDAttribute, "")}, "", "not a non-empty String"},
		{"dedup: the original's, in the copy's group", sqsconsumer.DeduplicationKey, events.SQSMessage{Attributes: fifo, MessageAttributes: attrs(sqsconsumer.RedriveDeduplicationIDAttribute, "d-1")}, "g/d-1", ""},
		{"dedup: DefaultKey before the messageId", sqsconsumer.DefaultKey, events.SQSMessage{MessageId: "m-2", Attributes: fifo, MessageAttributes: attrs(sqsconsumer.RedriveDeduplicationIDAttribute, "d-1", sqsconsumer.RedriveMessageIDAttribute, orig)}, "g/d-1", ""},
		{"dedup: the queue-scoped key", sqsconsumer.QueueDeduplicationKey, events.SQSMessage{Attributes: fifo, MessageAttributes: attrs(sqsconsumer.RedriveDeduplicationIDAttribute, "d-1")}, "d-1", ""},
		{"dedup: a standard queue has none", sqsconsumer.DeduplicationKey, events.SQSMessage{MessageAttributes: attrs(sqsconsumer.RedriveDeduplicationIDAttribute, "d-1")}, "", ""},
		{"dedup: not one SQS takes", sqsconsumer.DeduplicationKey, events.SQSMessage{Attributes: fifo, MessageAttributes: attrs(sqsconsumer.RedriveDeduplicationIDAttribute, "d 1")}, "", "is not a deduplication id"},
		{"dedup: over 128 characters", sqsconsumer.DeduplicationKey, events.SQSMessage{Attributes: fifo, MessageAttributes: attrs(sqsconsumer.RedriveDeduplicationIDAttribute, strings.Repeat("d", 129))}, "", "is not a deduplication id"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.fn(tc.rec)
			if tc.error != "" {
				if err == nil || !strings.Contains(err.Error(), tc.error) {
					t.Fatalf("expect an error saying %q, got %q, %v", tc.error, got, err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("expect %q, got %q, %v", tc.want, got, err)
			}
		})
	}
}

// TestFailedLogNamesKey: a key function that reads the key and then finds
// the body it cannot use fails the record before any claim, and the
// Failed line carries the record's id and key, so that the failure can be
// found in the logs by its key.
func TestFailedLogNamesKey(t *testing.T) {
	e := newEnv(t)
	key := func(rec events.SQSMessage) (string, error) {
		k, err := sqsconsumer.AttributeKey(rec)
		if err == nil && !json.Valid([]byte(rec.Body)) {
			err = errors.New("the body is not JSON")
		}
		return k, err
	}
	rec := idemtest.SQSMessage("credits", `{"account":`, map[string]string{"IdempotencyKey": "evt_bad"})
	checkFailed(t, e.run(t, context.Background(), []events.SQSMessage{rec}, func(o *sqsconsumer.Options) { o.Key = key }), rec.MessageId)
	var line map[string]any
	if err := json.Unmarshal(e.logs.Bytes(), &line); err != nil {
		t.Fatalf("%v: %s", err, e.logs.String())
	}
	if line["outcome"] != "Failed" || line["id"] != "evt_bad" || line["key"] != "credits#evt_bad" || line["messageId"] != rec.MessageId ||
		!strings.Contains(line["error"].(string), "the body is not JSON") {
		t.Errorf("expect the Failed line with id evt_bad and key credits#evt_bad, got %s", e.logs.String())
	}
	if n := e.Claims(t); n != 0 {
		t.Errorf("expect no claim, got %d", n)
	}
	t.Logf("%s", e.logs.String())
}
