package sqsconsumer_test

import (
	"context"
	"fmt"
	"log"
	"strconv"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemkit/kit/idem"
	"github.com/idemkit/kit/idem/sqsconsumer"
)

// A Lambda function consuming a queue whose bodies are amounts in cents,
// each added once to one account's balance.
func ExampleNew() {
	cfg, err := config.LoadDefaultConfig(context.Background())
	if err != nil {
		log.Fatal(err)
	}
	store, err := idem.New(dynamodb.NewFromConfig(cfg), "processed-ids")
	if err != nil {
		log.Fatal(err)
	}
	h, err := sqsconsumer.New(store, func(ctx context.Context, rec events.SQSMessage) (idem.Effect, error) {
		cents, err := strconv.ParseInt(rec.Body, 10, 64)
		if err != nil {
			return idem.Effect{}, fmt.Errorf("body %q is not a whole number of cents", rec.Body)
		}
		return idem.Effect{Writes: []types.TransactWriteItem{{Update: &types.Update{
			TableName:                 aws.String("accounts"),
			Key:                       map[string]types.AttributeValue{"account": &types.AttributeValueMemberS{Value: "acc-9"}},
			UpdateExpression:          aws.String("ADD balance :c"),
			ExpressionAttributeValues: map[string]types.AttributeValue{":c": &types.AttributeValueMemberN{Value: strconv.FormatInt(cents, 10)}},
		}}}}, nil
	}, func(o *sqsconsumer.Options) { o.Concurrency = 5 })
	if err != nil {
		log.Fatal(err)
	}
	lambda.Start(h)
}

func ExampleDefaultKey() {
	recs := []events.SQSMessage{
		{MessageId: "059f36b4", MessageAttributes: map[string]events.SQSMessageAttribute{
			sqsconsumer.KeyAttribute: {DataType: "String", StringValue: aws.String("order-77")},
		}},
		{MessageId: "2e1424d4", Attributes: map[string]string{"MessageGroupId": "acc-9", "MessageDeduplicationId": "evt_101"}},
		{MessageId: "7c3d90a2", Attributes: map[string]string{"MessageGroupId": "eu/acc-9", "MessageDeduplicationId": "evt_101"}},
		{MessageId: "8a4f5e1c"},
	}
	for _, rec := range recs {
		key, err := sqsconsumer.DefaultKey(rec)
		fmt.Println(key, err)
	}
	// Output:
	// order-77 <nil>
	// acc-9/evt_101 <nil>
	// eu%2Facc-9/evt_101 <nil>
	// 8a4f5e1c <nil>
}
