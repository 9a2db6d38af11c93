package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/idemkit/kit/idem/idemtest"
	"github.com/idemkit/kit/idem/outbox"
)

func readEvent(t *testing.T, name string) []byte {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("..", "..", "events", name))
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

// TestEventsRoundTrip decodes events/dynamodb-outbox.json into
// events.DynamoDBEvent, refusing fields the type does not have, and
// expects every member of the file back, equal, when the value is encoded
// again.
func TestEventsRoundTrip(t *testing.T) {
	idemtest.CheckJSONRoundTrip(t, readEvent(t, "dynamodb-outbox.json"), &events.DynamoDBEvent{})
}

// sent records the batches the relay sends, and sends none.
type sent struct{ batches []*sqs.SendMessageBatchInput }

func (s *sent) SendMessageBatch(_ context.Context, in *sqs.SendMessageBatchInput, _ ...func(*sqs.Options)) (*sqs.SendMessageBatchOutput, error) {
	s.batches = append(s.batches, in)
	out := &sqs.SendMessageBatchOutput{}
	for _, e := range in.Entries {
		out.Successful = append(out.Successful, sqstypes.SendMessageBatchResultEntry{Id: e.Id, MessageId: aws.String("m-" + aws.ToString(e.Id))})
	}
	return out, nil
}

// TestEventIsRelayed hands events/dynamodb-outbox.json to the relay: its
// one outbox item is sent to the ledger queue as a credit.applied message
// whose IdempotencyKey is the item's outbox id.
func TestEventIsRelayed(t *testing.T) {
	var ev events.DynamoDBEvent
	if err := json.Unmarshal(readEvent(t, "dynamodb-outbox.json"), &ev); err != nil {
		t.Fatal(err)
	}
	sqsClient := &sent{}
	relay, err := outbox.New(func(o *outbox.Options) { o.SQS = sqsClient })
	if err != nil {
		t.Fatal(err)
	}
	resp, err := relay.Handle(context.Background(), ev)
	if err != nil || len(resp.BatchItemFailures) != 0 {
		t.Fatalf("want no failure, got %v, %v", resp.BatchItemFailures, err)
	}
	if len(sqsClient.batches) != 1 || len(sqsClient.batches[0].Entries) != 1 {
		t.Fatalf("want one batch of one message, got %+v", sqsClient.batches)
	}
	in, e := sqsClient.batches[0], sqsClient.batches[0].Entries[0]
	for what, got := range map[string][2]string{
		"queue":          {aws.ToString(in.QueueUrl), "https://sqs.us-east-1.amazonaws.com/123456789012/idemkit-LedgerQueue"},
		"body":           {aws.ToString(e.MessageBody), `{"account":"acc-9","cents":500,"id":"evt_001"}`},
		"IdempotencyKey": {aws.ToString(e.MessageAttributes["IdempotencyKey"].StringValue), ev.Records[0].Change.NewImage["outboxId"].String()},
		"Type":           {aws.ToString(e.MessageAttributes["Type"].StringValue), "credit.applied"},
	} {
		if got[0] != got[1] {
			t.Errorf("%s: want %q, got %q", what, got[1], got[0])
		}
	}
}
