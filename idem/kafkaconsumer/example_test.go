package kafkaconsumer_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemkit/kit/idem"
	"github.com/idemkit/kit/idem/idemtest"
	"github.com/idemkit/kit/idem/kafkaconsumer"
)

// A topic of JSON credits, each applied once to its account. In a
// function's main the client is dynamodb.NewFromConfig(cfg) and h goes to
// lambda.Start(h); here a local DynamoDB stands in, and the batch comes
// twice, as Lambda hands it over again after a timeout. Partition 1's
// first record does not decode: it and the record after it are retried,
// partition 0 goes on.
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
	type credit struct {
		Account string `json:"account"`
		Cents   int64  `json:"cents"`
	}
	h, err := kafkaconsumer.New(store, kafkaconsumer.JSONHandler(func(ctx context.Context, c credit, rec events.KafkaRecord) (idem.Effect, error) {
		w, err := idem.Update(env.Accounts, map[string]string{"account": c.Account}, expression.Add(expression.Name("balance"), expression.Value(c.Cents)))
		return idem.Effect{Writes: []types.TransactWriteItem{w}}, err
	}))
	if err != nil {
		panic(err)
	}
	key := func(k string) map[string]string { return map[string]string{kafkaconsumer.KeyHeader: k} }
	batch := idemtest.KafkaEvent(
		idemtest.KafkaRecord("credits", 0, 15, `{"account":"acc-9","cents":500}`, key("evt-101")),
		idemtest.KafkaRecord("credits", 0, 16, `{"account":"acc-9","cents":250}`, key("evt-102")),
		idemtest.KafkaRecord("credits", 1, 7, `{"account":"acc-9","cents":"a lot"}`, key("evt-103")),
		idemtest.KafkaRecord("credits", 1, 8, `{"account":"acc-9","cents":5}`, key("evt-104")),
	)
	for range 2 {
		resp, err := h(ctx, batch)
		out, _ := json.Marshal(resp)
		fmt.Println(string(out), err)
	}
	out, _ := env.Client.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(env.Accounts), ConsistentRead: aws.Bool(true),
		Key: map[string]types.AttributeValue{"account": &types.AttributeValueMemberS{Value: "acc-9"}}})
	fmt.Println("balance", out.Item["balance"].(*types.AttributeValueMemberN).Value)
	// Output:
	// {"batchItemFailures":[{"itemIdentifier":{"partition":"credits-1","offset":7}},{"itemIdentifier":{"partition":"credits-1","offset":8}}]} <nil>
	// {"batchItemFailures":[{"itemIdentifier":{"partition":"credits-1","offset":7}},{"itemIdentifier":{"partition":"credits-1","offset":8}}]} <nil>
	// balance 750
}

func ExampleDefaultKey() {
	recs := []events.KafkaRecord{
		idemtest.KafkaRecord("credits", 0, 15, "{}", map[string]string{kafkaconsumer.KeyHeader: "evt-101"}),
		idemtest.KafkaRecord("credits", 3, 42, "{}", nil),
		idemtest.KafkaRecord("credits", 0, 16, "{}", map[string]string{kafkaconsumer.KeyHeader: ""}),
	}
	for _, rec := range recs {
		key, err := kafkaconsumer.DefaultKey(rec)
		fmt.Printf("%q %v\n", key, err)
	}
	// Output:
	// "evt-101" <nil>
	// "credits/3/42" <nil>
	// "" kafkaconsumer: header idempotency-key is empty
}
