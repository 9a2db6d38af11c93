package stream_test

import (
	"context"
	"fmt"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemkit/kit/idem"
	"github.com/idemkit/kit/idem/idemtest"
	"github.com/idemkit/kit/idem/stream"
)

// An orders table's stream counts each new order once per account, though
// Lambda hands the batch over twice (a retry after a timeout, say).
func ExampleClaimed() {
	ctx := context.Background()
	env, err := idemtest.Start(ctx) // a local DynamoDB, as in tests
	if err != nil {
		fmt.Println(err)
		return
	}
	store, err := idem.New(env.Client, env.Processed)
	if err != nil {
		panic(err)
	}
	count, err := stream.Claimed(store, func(ctx context.Context, rec events.DynamoDBEventRecord) (idem.Effect, error) {
		w, err := idem.Update(env.Accounts, map[string]string{"account": rec.Change.NewImage["account"].String()},
			expression.Add(expression.Name("orders"), expression.Value(1)))
		return idem.Effect{Writes: []types.TransactWriteItem{w}}, err
	})
	if err != nil {
		panic(err)
	}
	handle, err := stream.DynamoDB(count)
	if err != nil {
		panic(err)
	}
	order := map[string]events.DynamoDBAttributeValue{"order": events.NewStringAttribute("o-1"), "account": events.NewStringAttribute("acc-9")}
	batch := idemtest.DynamoDBEvent(idemtest.StreamRecord("orders", "100", nil, order))
	for range 2 {
		resp, err := handle(ctx, batch)
		fmt.Println("failed records:", resp.BatchItemFailures, err)
	}
	out, err := env.Client.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(env.Accounts), ConsistentRead: aws.Bool(true),
		Key: map[string]types.AttributeValue{"account": &types.AttributeValueMemberS{Value: "acc-9"}}})
	if err != nil {
		panic(err)
	}
	fmt.Println("orders", out.Item["orders"].(*types.AttributeValueMemberN).Value)
	// Output:
	// failed records: [] <nil>
	// failed records: [] <nil>
	// orders 1
}
