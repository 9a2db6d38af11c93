package idemtest_test

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemkit/kit/idem"
	"github.com/idemkit/kit/idem/idemtest"
	"github.com/idemkit/kit/idem/sqsconsumer"
	"github.com/idemkit/kit/idem/webhook"
)

// A queue consumer's message delivered three times, as SQS redelivers it:
// one credit, two Duplicates. In a test, NewEnv(t) and env.Store(t) take
// the place of Start and idem.New.
func ExampleReplay() {
	ctx := context.Background()
	env, err := idemtest.Start(ctx) // a local DynamoDB: Python 3 with moto, or AWS_ENDPOINT_URL_DYNAMODB
	if err != nil {
		fmt.Println(err)
		return
	}
	store, err := idem.New(env.Client, env.Processed, env.Outcomes.Option, func(o *idem.Options) { o.Logger = slog.New(slog.DiscardHandler) })
	if err != nil {
		fmt.Println(err)
		return
	}
	h, err := sqsconsumer.New(store, sqsconsumer.JSONHandler(func(_ context.Context, c struct{ Cents int64 }, _ events.SQSMessage) (idem.Effect, error) {
		w, err := idem.Update(env.Accounts, map[string]string{"account": "acc-1"}, expression.Add(expression.Name("balance"), expression.Value(c.Cents)))
		return idem.Effect{Writes: []types.TransactWriteItem{w}}, err
	}))
	if err != nil {
		fmt.Println(err)
		return
	}
	msg := idemtest.SQSMessage("credits", `{"cents":500}`, map[string]string{sqsconsumer.KeyAttribute: "evt-1"})
	for i, d := range idemtest.Replay(ctx, 3, h, idemtest.SQSEvent(msg)) {
		fmt.Printf("delivery %d: %d record(s) to retry, error %v\n", i+1, len(d.Response.BatchItemFailures), d.Err)
	}
	fmt.Println(env.Outcomes.Count(idem.Processed), "Processed,", env.Outcomes.Count(idem.Duplicate), "Duplicate")
	// Output:
	// delivery 1: 0 record(s) to retry, error <nil>
	// delivery 2: 0 record(s) to retry, error <nil>
	// delivery 3: 0 record(s) to retry, error <nil>
	// 1 Processed, 2 Duplicate
}

// A REST API's webhook event, as Lambda hands it to the function, replayed
// through a Mux: the retry gets the first answer back.
func ExampleRESTRequest() {
	ctx := context.Background()
	env, err := idemtest.Start(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	store, err := idem.New(env.Client, env.Processed, func(o *idem.Options) { o.Logger = slog.New(slog.DiscardHandler) })
	if err != nil {
		fmt.Println(err)
		return
	}
	r, err := webhook.New(store, func(_ context.Context, req webhook.Request) (webhook.Response, idem.Effect, error) {
		return webhook.Response{Status: 201, Body: []byte("created " + req.Key)}, idem.Effect{}, nil
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	mux := webhook.Mux{"POST /orders": r}
	for _, d := range idemtest.Replay(ctx, 2, mux.Handle, idemtest.RESTRequest("POST", "/orders", `{}`, map[string]string{"Idempotency-Key": "order-7"})) {
		resp := d.Response.(events.APIGatewayProxyResponse)
		fmt.Println(resp.StatusCode, resp.Body, "replayed:", resp.Headers["Idempotent-Replayed"] == "true")
	}
	// Output:
	// 201 created order-7 replayed: false
	// 201 created order-7 replayed: true
}
