package handler_test

import (
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/idemkit/kit/functions/queue/internal/handler"
)

func TestKeyOrder(t *testing.T) {
	body := `{"id": "evt_001", "account": "acc-9", "cents": 500}`
	withAttr := map[string]events.SQSMessageAttribute{"IdempotencyKey": {DataType: "String", StringValue: aws.String("order-77")}}
	fifo := map[string]string{"MessageGroupId": "acc-9", "MessageDeduplicationId": "dedup-1"}
	for _, tc := range []struct {
		name string
		rec  events.SQSMessage
		want string
		fail bool // the body is no credit: an error, with the key it is logged under
	}{
		{"attribute before all", events.SQSMessage{MessageId: "m", Body: body, Attributes: fifo, MessageAttributes: withAttr}, "order-77", false},
		{"group and deduplication id before body id", events.SQSMessage{MessageId: "m", Body: body, Attributes: fifo}, "acc-9/dedup-1", false},
		{"body id before messageId", events.SQSMessage{MessageId: "m", Body: body}, "evt_001", false},
		{"messageId when the body has no id", events.SQSMessage{MessageId: "m", Body: `{"account": "acc-9", "cents": 500}`}, "m", false},
		{"a body that is no credit fails under its attribute", events.SQSMessage{MessageId: "m", Body: `{"id": "evt_001", "account": "acc-9", "cents": 0}`, MessageAttributes: withAttr}, "order-77", true},
		{"a body that is no credit has no body id", events.SQSMessage{MessageId: "m", Body: `{"id": "evt_001", "account": `}, "m", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := handler.Key(tc.rec)
			if (err != nil) != tc.fail || got != tc.want {
				t.Fatalf("expect %q (an error: %v), got %q, %v", tc.want, tc.fail, got, err)
			}
		})
	}
}
