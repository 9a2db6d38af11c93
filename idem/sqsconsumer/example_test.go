package sqsconsumer_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemkit/kit/idem"
	"github.com/idemkit/kit/idem/idemtest"
	"github.com/idemkit/kit/idem/sqsconsumer"
)

// A queue whose bodies are amounts in cents, each added once to one
// account's balance. In a function's main the client is
// dynamodb.NewFromConfig(cfg) and h goes to lambda.Start(h); here a local
// DynamoDB stands in, and the batch comes twice, as SQS redelivers it.
func ExampleNew() {
	ctx := context.Background()
	env, err := idemtest.Start(ctx) // a local DynamoDB, as in tests
	if err != nil {
		fmt.Println(err)
		return
	}
	store, err := idem.New(env.Client, env.Processed, func(o *idem.Options) { o.Logger = slog.New(slog.DiscardHandler) })
	if err != nil {
		panic(err)
	}
	h, err := sqsconsumer.New(store, func(ctx context.Context, rec events.SQSMessage) (idem.Effect, error) {
		cents, err := strconv.ParseInt(rec.Body, 10, 64)
		if err != nil {
			return idem.Effect{}, fmt.Errorf("body %q is not a whole number of cents", rec.Body)
		}
		w, err := idem.Update(env.Accounts, map[string]string{"account": "acc-9"}, expression.Add(expression.Name("balance"), expression.Value(cents)))
		return idem.Effect{Writes: []types.TransactWriteItem{w}}, err
	}, func(o *sqsconsumer.Options) { o.Concurrency = 5 })
	if err != nil {
		panic(err)
	}
	const queue = "arn:aws:sqs:us-east-1:123456789012:credits"
	batch := events.SQSEvent{Records: []events.SQSMessage{
		{MessageId: "m-1", Body: "500", EventSourceARN: queue},
		{MessageId: "m-2", Body: "250", EventSourceARN: queue},
		{MessageId: "m-3", Body: "a lot", EventSourceARN: queue},
	}}
	for range 2 {
		resp, err := h(ctx, batch)
		fmt.Println("retry:", resp.BatchItemFailures, err)
	}
	out, _ := env.Client.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(env.Accounts), ConsistentRead: aws.Bool(true),
		Key: map[string]types.AttributeValue{"account": &types.AttributeValueMemberS{Value: "acc-9"}}})
	fmt.Println("balance", out.Item["balance"].(*types.AttributeValueMemberN).Value)
	// Output:
	// retry: [{m-3}] <nil>
	// retry: [{m-3}] <nil>
	// balance 750
}

// A batch handler wrapped as aws-lambda-go's users wrap theirs: the
// wrapper takes and returns a BatchHandler, and main hands it to
// lambda.Start(withRetries(h)). Here it prints the records each batch
// sends back.
func ExampleBatchHandler() {
	ctx := context.Background()
	env, err := idemtest.Start(ctx) // a local DynamoDB, as in tests
	if err != nil {
		fmt.Println(err)
		return
	}
	store, err := idem.New(env.Client, env.Processed, func(o *idem.Options) { o.Logger = slog.New(slog.DiscardHandler) })
	if err != nil {
		panic(err)
	}
	h, err := sqsconsumer.New(store, func(ctx context.Context, rec events.SQSMessage) (idem.Effect, error) {
		if rec.Body == "" {
			return idem.Effect{}, errors.New("an empty body")
		}
		return idem.Effect{Response: []byte(rec.Body)}, nil
	})
	if err != nil {
		panic(err)
	}
	h = withRetries(h)
	const queue = "arn:aws:sqs:us-east-1:123456789012:orders"
	h(ctx, events.SQSEvent{Records: []events.SQSMessage{
		{MessageId: "m-1", Body: "order 1", EventSourceARN: queue},
		{MessageId: "m-2", Body: "", EventSourceARN: queue},
	}})
	// Output:
	// 2 records, 1 to retry: [{m-2}]
}

// withRetries wraps h to print what each batch sends back.
func withRetries(h sqsconsumer.BatchHandler) sqsconsumer.BatchHandler {
	return func(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
		resp, err := h(ctx, ev)
		fmt.Printf("%d records, %d to retry: %v\n", len(ev.Records), len(resp.BatchItemFailures), resp.BatchItemFailures)
		return resp, err
	}
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

// A queue of JSON credits decoded into a struct: each record's credit is
// applied once, the batch answered with the records to retry. A body that
// does not decode fails its record alone, with the decoder's reason.
func ExampleJSONHandler() {
	ctx := context.Background()
	env, err := idemtest.Start(ctx) // a local DynamoDB, as in tests
	if err != nil {
		fmt.Println(err)
		return
	}
	client, processed, accounts := env.Client, env.Processed, env.Accounts
	store, err := idem.New(client, processed, func(o *idem.Options) {
		o.Logger = slog.New(slog.DiscardHandler)
		o.Observers = []idem.Observer{printFailures{}}
	})
	if err != nil {
		panic(err)
	}
	type credit struct {
		Account string `json:"account"`
		Cents   int64  `json:"cents"`
	}
	h, err := sqsconsumer.New(store, sqsconsumer.JSONHandler(func(ctx context.Context, c credit, rec events.SQSMessage) (idem.Effect, error) {
		w, err := idem.Update(accounts, map[string]string{"account": c.Account}, expression.Add(expression.Name("balance"), expression.Value(c.Cents)))
		return idem.Effect{Writes: []types.TransactWriteItem{w}}, err
	}))
	if err != nil {
		panic(err)
	}
	const queue = "arn:aws:sqs:us-east-1:123456789012:credits"
	batch := events.SQSEvent{Records: []events.SQSMessage{
		{MessageId: "m-1", Body: `{"account":"acc-9","cents":500}`, EventSourceARN: queue},
		{MessageId: "m-2", Body: `{"account":"acc-9","cents":"250"}`, EventSourceARN: queue},
	}}
	for range 2 { // the batch, and the batch again
		resp, _ := h(ctx, batch)
		fmt.Println("retry:", resp.BatchItemFailures)
	}
	out, _ := client.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(accounts), ConsistentRead: aws.Bool(true),
		Key: map[string]types.AttributeValue{"account": &types.AttributeValueMemberS{Value: "acc-9"}}})
	fmt.Println("balance", out.Item["balance"].(*types.AttributeValueMemberN).Value)
	// Output:
	// Failed credits#m-2: idem: "credits#m-2": handler: sqsconsumer: the body does not decode into the handler's type: json: cannot unmarshal string into Go struct field credit.cents of type int64
	// retry: [{m-2}]
	// Failed credits#m-2: idem: "credits#m-2": handler: sqsconsumer: the body does not decode into the handler's type: json: cannot unmarshal string into Go struct field credit.cents of type int64
	// retry: [{m-2}]
	// balance 500
}

// printFailures prints each failed delivery's key and error.
type printFailures struct{}

func (printFailures) Observe(_ context.Context, o idem.Observation) {
	if o.Outcome == idem.Failed {
		fmt.Printf("%s %s: %v\n", o.Outcome, o.Key, o.Err)
	}
}
