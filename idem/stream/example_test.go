package stream_test

import (
	"context"
	"fmt"
	"strconv"

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

// A hot account: each credit commits an entry of its own with its claim,
// never contended however many environments deliver at once, and the
// entries table's stream brings the balance up to date, each entry once,
// many entries a write.
func ExampleAggregate() {
	ctx := context.Background()
	env, err := idemtest.Start(ctx) // a local DynamoDB, as in tests
	if err != nil {
		fmt.Println(err)
		return
	}
	entries, err := env.CreateTable(ctx, idemtest.Table{Name: "entries", HashKey: "entry", Stream: true})
	if err != nil {
		panic(err)
	}
	type entry struct {
		Entry   string `dynamodbav:"entry"`
		Account string `dynamodbav:"account"`
		Cents   int    `dynamodbav:"cents"`
	}
	// Thirty credits to one account, each from an environment of its own.
	for i := range 30 {
		store, err := idem.New(env.Client, env.Processed)
		if err != nil {
			panic(err)
		}
		id := fmt.Sprint("credit-", i)
		if _, err := store.Process(ctx, idem.Message{ID: id, Source: "credits"}, func(context.Context, idem.Message) (idem.Effect, error) {
			w, err := idem.Put(entries, entry{Entry: id, Account: "acc-hot", Cents: 100})
			return idem.Effect{Writes: []types.TransactWriteItem{w}}, err
		}); err != nil {
			panic(err)
		}
	}
	// The entries' stream, folded into the balance.
	store, err := idem.New(env.Client, env.Processed)
	if err != nil {
		panic(err)
	}
	handle, err := stream.Aggregate(store, func(ctx context.Context, rec events.DynamoDBEventRecord) (idem.Effect, error) {
		cents, err := strconv.Atoi(rec.Change.NewImage["cents"].Number())
		if err != nil {
			return idem.Effect{}, err
		}
		w, err := idem.Update(env.Accounts, map[string]string{"account": rec.Change.NewImage["account"].String()},
			expression.Add(expression.Name("balance"), expression.Value(cents)))
		return idem.Effect{Writes: []types.TransactWriteItem{w}}, err
	})
	if err != nil {
		panic(err)
	}
	recs, err := idemtest.ReadStream(ctx, env.Client, entries)
	if err != nil {
		panic(err)
	}
	env.Calls.Reset()
	for range 2 { // Lambda may hand a batch over twice
		resp, err := handle(ctx, idemtest.DynamoDBEvent(recs...))
		fmt.Println("failed records:", resp.BatchItemFailures, err)
	}
	out, err := env.Client.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(env.Accounts), ConsistentRead: aws.Bool(true),
		Key: map[string]types.AttributeValue{"account": &types.AttributeValueMemberS{Value: "acc-hot"}}})
	if err != nil {
		panic(err)
	}
	fmt.Println("balance", out.Item["balance"].(*types.AttributeValueMemberN).Value, "in", env.Calls.Count("TransactWriteItems"), "transactions")
	// Output:
	// failed records: [] <nil>
	// failed records: [] <nil>
	// balance 3000 in 2 transactions
}
