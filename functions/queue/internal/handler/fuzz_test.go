package handler_test

import (
	"context"
	"log/slog"
	"testing"
	"unicode/utf8"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/idemkit/kit/functions/internal/credit"
	"github.com/idemkit/kit/functions/queue/internal/handler"
	"github.com/idemkit/kit/idem"
)

// commitAll accepts every transaction: the fuzz target tests the queue
// function's reading of a record, not the claim.
type commitAll struct{}

func (commitAll) TransactWriteItems(context.Context, *dynamodb.TransactWriteItemsInput, ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error) {
	return &dynamodb.TransactWriteItemsOutput{}, nil
}

// FuzzRecord: the queue function's key is its documented order (the
// IdempotencyKey attribute, the deduplication id, the body's "id", the
// messageId), none for a body that is no credit, and its handler fails a
// record exactly when that key or the credit in its body is unusable;
// never a panic, never a function error.
func FuzzRecord(f *testing.F) {
	f.Add("m-1", `{"id":"evt_001","account":"acc-9","cents":500}`, "", "", false)
	f.Add("m-1", `{"id":"evt_001","account":"acc-9","cents":500}`, "order-7", "dedup-1", true)
	f.Add("m-1", `{"id":5,"account":"acc-9","cents":500}`, "", "", false)
	f.Add("", `{"account":"acc-9","cents":500}`, "", "", false)
	f.Add("m-1", `{"id":"","account":"acc-9","cents":0}`, "", "", false)
	f.Add("m-1", "{\"id\":\"evt\xff\",\"account\":\"a\",\"cents\":1}", "", "", false)
	f.Add("m-1", `{"id":"evt_1\r\nX: 1","account":"a","cents":1}`, "k\x00", "", false)
	store, err := idem.New(commitAll{}, "processed", func(o *idem.Options) {
		o.Logger = slog.New(slog.DiscardHandler)
	})
	if err != nil {
		f.Fatal(err)
	}
	h, err := handler.New(store, credit.Applier{AccountsTable: "accounts"})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, id, body, attr, dedup string, fifo bool) {
		arn := "arn:aws:sqs:us-east-1:123456789012:credits"
		rec := events.SQSMessage{MessageId: id, Body: body, EventSource: "aws:sqs"}
		if attr != "" {
			rec.MessageAttributes = map[string]events.SQSMessageAttribute{"IdempotencyKey": {DataType: "String", StringValue: aws.String(attr)}}
		}
		if fifo {
			arn += ".fifo"
			rec.Attributes = map[string]string{"MessageGroupId": "g", "MessageDeduplicationId": dedup}
		}
		rec.EventSourceARN = arn
		c, perr := credit.Parse([]byte(body))
		want := id
		switch {
		case attr != "":
			want = attr
		case fifo && dedup != "":
			want = "g/" + dedup
		case perr == nil && c.ID != "":
			want = c.ID
		}
		key, err := handler.Key(rec)
		switch {
		case perr != nil: // no credit: an error, with the key its failure is logged under
			if err == nil || key != want {
				t.Fatalf("key of a body that is no credit (%v): expect an error with the key %q, got %q, %v", perr, want, key, err)
			}
		case err != nil || key != want:
			t.Fatalf("key: expect %q, got %q, %v", want, key, err)
		}
		resp, err := h(context.Background(), events.SQSEvent{Records: []events.SQSMessage{rec}})
		if err != nil || resp.BatchItemFailures == nil {
			t.Fatalf("expect a batch response and no error, got %v, %v", resp.BatchItemFailures, err)
		}
		claimKey := "credits#" + key
		if fifo {
			claimKey = "credits.fifo#" + key
		}
		wantFailed := key == "" || !utf8.ValidString(claimKey) || len(claimKey) > 2048 || perr != nil
		if failed := len(resp.BatchItemFailures) == 1; failed != wantFailed {
			t.Fatalf("record with key %q and body error %v: expect failed %v, got %v", key, perr, wantFailed, resp.BatchItemFailures)
		}
	})
}
