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

// A debit that would overdraw the account fails its condition; Effect.Rejected
// records the refusal as the message's answer, so its redelivery replays it
// instead of failing until the dead-letter queue.
func ExampleEffect_rejected() {
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
	debit := func(ctx context.Context, m idem.Message) (idem.Effect, error) {
		w, err := idem.Update(env.Accounts, map[string]string{"account": "acc-9"},
			expression.Add(expression.Name("balance"), expression.Value(-500)),
			expression.Name("balance").GreaterThanEqual(expression.Value(500))) // refuse an overdraft
		if err != nil {
			return idem.Effect{}, err
		}
		w.Update.ReturnValuesOnConditionCheckFailure = types.ReturnValuesOnConditionCheckFailureAllOld // for Decode
		return idem.Effect{
			Writes:   []types.TransactWriteItem{w},
			Response: []byte("debited 500"),
			Rejected: func(rej *idem.RejectedError) ([]byte, error) {
				var acc struct{ Balance int64 }
				if err := rej.Decode(&acc); err != nil {
					return nil, err
				}
				return fmt.Appendf(nil, "refused: balance %d", acc.Balance), nil
			},
		}, nil
	}
	credit, err := idem.Update(env.Accounts, map[string]string{"account": "acc-9"}, expression.Add(expression.Name("balance"), expression.Value(300)))
	if err != nil {
		panic(err)
	}
	_, err = store.Process(ctx, idem.Message{ID: "evt_1", Source: "credits"}, func(context.Context, idem.Message) (idem.Effect, error) {
		return idem.Effect{Writes: []types.TransactWriteItem{credit}}, nil
	})
	fmt.Println("credit 300:", err)
	msg := idem.Message{ID: "evt_2", Source: "debits", Payload: []byte(`{"account":"acc-9","cents":500}`)}
	for range 2 {
		res, err := store.Process(ctx, msg, debit)
		fmt.Println(res.Outcome, string(res.Record.Response), err)
	}
	// Output:
	// credit 300: <nil>
	// Rejected refused: balance 300 <nil>
	// Duplicate refused: balance 300 <nil>
}

// A Store with a cache answers a warm environment's duplicates from
// memory: three deliveries, one call.
func ExampleOptions_cache() {
	ctx := context.Background()
	env, err := idemtest.Start(ctx) // a local DynamoDB, as in tests
	if err != nil {
		fmt.Println(err)
		return
	}
	store, err := idem.New(env.Client, env.Processed, func(o *idem.Options) { o.CacheSize = 1000 })
	if err != nil {
		panic(err)
	}
	credit := func(ctx context.Context, m idem.Message) (idem.Effect, error) {
		w, err := idem.Update(env.Accounts, map[string]string{"account": "acc-9"}, expression.Add(expression.Name("balance"), expression.Value(500)))
		return idem.Effect{Writes: []types.TransactWriteItem{w}}, err
	}
	msg := idem.Message{ID: "evt_001", Source: "credits", Payload: []byte(`{"account":"acc-9","cents":500}`)}
	for range 3 {
		res, err := store.Process(ctx, msg, credit)
		fmt.Println(res.Outcome, "cached:", res.Cached, err)
	}
	fmt.Println("TransactWriteItems calls:", env.Calls.Count("TransactWriteItems"))
	// Output:
	// Processed cached: false <nil>
	// Duplicate cached: true <nil>
	// Duplicate cached: true <nil>
	// TransactWriteItems calls: 1
}

// A handler that must call a payment API before its write can be
// described runs under a lease and forwards the lease's key, the same for
// every delivery of the message, as the API's Idempotency-Key. The
// redelivery finds the committed claim and calls nothing.
func ExampleStore_ProcessLeased() {
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
	calls := 0
	pay := func(idempotencyKey string) string { // a stand-in for a payment API that deduplicates its key
		calls++
		return "rcpt-" + idempotencyKey
	}
	payout := func(ctx context.Context, m idem.Message) (idem.Effect, error) {
		lease, _ := idem.LeaseFromContext(ctx)
		receipt := pay(lease.Key)
		w, err := idem.Update(env.Accounts, map[string]string{"account": "acc-9"}, expression.Set(expression.Name("lastReceipt"), expression.Value(receipt)))
		return idem.Effect{Writes: []types.TransactWriteItem{w}, Response: []byte(receipt)}, err
	}
	msg := idem.Message{ID: "po_1", Source: "payouts", Payload: []byte(`{"account":"acc-9","cents":500}`)}
	for range 2 {
		res, err := store.ProcessLeased(ctx, msg, payout)
		fmt.Println(res.Outcome, string(res.Record.Response), err)
	}
	fmt.Println("payment API calls:", calls)
	// Output:
	// Processed rcpt-payouts#po_1 <nil>
	// Duplicate rcpt-payouts#po_1 <nil>
	// payment API calls: 1
}
