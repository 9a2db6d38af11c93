package idem_test

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemkit/kit/idem"
	"github.com/idemkit/kit/idem/idemtest"
)

// A credit delivered three times is applied once; the redeliveries are
// Duplicates that replay the stored response.
func Example() {
	ctx := context.Background()
	env, err := idemtest.Start(ctx) // a local DynamoDB, as in tests
	if err != nil {
		fmt.Println(err)
		return
	}
	client, processed, accounts := env.Client, env.Processed, env.Accounts
	store, err := idem.New(client, processed, func(o *idem.Options) {})
	if err != nil {
		panic(err)
	}
	credit := func(ctx context.Context, m idem.Message) (idem.Effect, error) {
		w, err := idem.Update(accounts, map[string]string{"account": "acc-9"}, expression.Add(expression.Name("balance"), expression.Value(500)))
		return idem.Effect{Writes: []types.TransactWriteItem{w}, Response: []byte("credited acc-9")}, err
	}
	msg := idem.Message{ID: "evt_001", Source: "credits", Payload: []byte(`{"account":"acc-9","cents":500}`)}
	for range 3 {
		res, err := store.Process(ctx, msg, credit)
		fmt.Println(res.Outcome, string(res.Record.Response), err)
	}
	out, _ := client.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(accounts), ConsistentRead: aws.Bool(true),
		Key: map[string]types.AttributeValue{"account": &types.AttributeValueMemberS{Value: "acc-9"}}})
	fmt.Println("balance", out.Item["balance"].(*types.AttributeValueMemberN).Value)
	// Output:
	// Processed credited acc-9 <nil>
	// Duplicate credited acc-9 <nil>
	// Duplicate credited acc-9 <nil>
	// balance 500
}
