package batch_test

import (
	"encoding/json"
	"fmt"

	"github.com/aws/aws-lambda-go/events"

	"github.com/idemkit/kit/idem/batch"
	"github.com/idemkit/kit/idem/sqsconsumer"
)

// A consumer keyed by the producer's IdempotencyKey attribute, else by the
// order id its body carries: FirstKey tries them in order.
func ExampleFirstKey() {
	orderID := func(rec events.SQSMessage) (string, error) {
		var body struct {
			Order string `json:"order"`
		}
		if err := json.Unmarshal([]byte(rec.Body), &body); err != nil {
			return "", fmt.Errorf("the body is no order: %w", err)
		}
		return body.Order, nil
	}
	key := batch.FirstKey(sqsconsumer.AttributeKey, orderID)
	// In New: func(o *sqsconsumer.Options) { o.Key = key }

	fmt.Println(key(events.SQSMessage{Body: `{"order":"ord-7"}`}))
	attr := "evt-1"
	fmt.Println(key(events.SQSMessage{Body: `{"order":"ord-7"}`, MessageAttributes: map[string]events.SQSMessageAttribute{
		sqsconsumer.KeyAttribute: {DataType: "String", StringValue: &attr},
	}}))
	// Output:
	// ord-7 <nil>
	// evt-1 <nil>
}
