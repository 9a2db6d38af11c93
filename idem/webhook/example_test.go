package webhook_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemkit/kit/idem"
	"github.com/idemkit/kit/idem/idemtest"
	"github.com/idemkit/kit/idem/webhook"
)

func ExampleStripeVerifier() {
	now := time.Unix(1_750_000_000, 0)
	v := &webhook.StripeVerifier{Secrets: []string{"whsec_old", "whsec_new"}, Now: func() time.Time { return now }}
	body := []byte(`{"id":"evt_1","type":"payment_intent.succeeded"}`)

	fresh := webhook.Header{"Stripe-Signature": idemtest.StripeSignature("whsec_new", now, body)}
	stale := webhook.Header{"Stripe-Signature": idemtest.StripeSignature("whsec_new", now.Add(-10*time.Minute), body)}
	fmt.Println(v.Verify(fresh, body))
	fmt.Println(v.Verify(stale, body))
	// Output:
	// <nil>
	// webhook: signature not verified: the Stripe-Signature timestamp is 600s old; the tolerance is 5m0s
}

func ExampleIdempotencyKey() {
	key := webhook.IdempotencyKey("id")
	body := []byte(`{"id":"evt_001","account":"acc-9","cents":500}`)
	fmt.Println(key(webhook.Header{"idempotency-key": "8e03978e-40d5"}, body))
	fmt.Println(key(webhook.Header{"Idempotency-Key": `"8e03978e-40d5"`}, body))
	fmt.Println(key(webhook.Header{}, body))
	// Output:
	// 8e03978e-40d5 <nil>
	// 8e03978e-40d5 <nil>
	// evt_001 <nil>
}

// A Stripe receiver: the signature verified, the key the event's id, the
// effect described, the answer stored and replayed. In a function's main
// the client is dynamodb.NewFromConfig(cfg), the secret comes from
// secrets.Env{Parameters: ssm.NewFromConfig(cfg)}.Load(ctx,
// "STRIPE_WEBHOOK_SECRET"), and the Mux's HandleV2 goes to lambda.Start;
// here a local DynamoDB stands in, and Stripe's retry comes after a
// delivery signed with another secret.
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
	r, err := webhook.New(store, func(ctx context.Context, req webhook.Request) (webhook.Response, idem.Effect, error) {
		resp, err := webhook.JSON(200, map[string]string{"received": req.Key})
		return resp, idem.Effect{}, err
	}, webhook.Stripe("whsec_test"))
	if err != nil {
		panic(err)
	}
	mux := webhook.Mux{"POST /webhooks/stripe": r}
	body := `{"id":"evt_1","type":"payment_intent.succeeded","created":1750000000}`
	for _, secret := range []string{"whsec_forged", "whsec_test", "whsec_test"} {
		sig := idemtest.StripeSignature(secret, time.Now(), []byte(body))
		resp, _ := mux.HandleV2(ctx, idemtest.HTTPRequest("POST", "/webhooks/stripe", body, map[string]string{"Stripe-Signature": sig}))
		fmt.Printf("%d replayed=%v %s\n", resp.StatusCode, resp.Headers["Idempotent-Replayed"] == "true", resp.Body)
	}
	// Output:
	// 401 replayed=false {"type":"about:blank","title":"Unauthorized","status":401,"detail":"signature not verified: no v1 in Stripe-Signature matches a configured secret"}
	// 200 replayed=false {"received":"evt_1"}
	// 200 replayed=true {"received":"evt_1"}
}

// A credits webhook whose body is decoded into a struct: the first
// delivery credits the account, its redelivery replays the answer, and a
// body that does not decode is a 400 with the decoder's reason, nothing
// committed.
func ExampleJSONHandler() {
	ctx := context.Background()
	env, err := idemtest.Start(ctx) // a local DynamoDB, as in tests
	if err != nil {
		fmt.Println(err)
		return
	}
	client, processed, accounts := env.Client, env.Processed, env.Accounts
	store, err := idem.New(client, processed, func(o *idem.Options) { o.Logger = slog.New(slog.DiscardHandler) })
	if err != nil {
		panic(err)
	}
	type credit struct {
		Account string `json:"account"`
		Cents   int64  `json:"cents"`
	}
	r, err := webhook.New(store, webhook.JSONHandler(func(ctx context.Context, c credit, req webhook.Request) (webhook.Response, idem.Effect, error) {
		w, err := idem.Update(accounts, map[string]string{"account": c.Account}, expression.Add(expression.Name("balance"), expression.Value(c.Cents)))
		if err != nil {
			return webhook.Response{}, idem.Effect{}, err
		}
		resp, err := webhook.JSON(200, map[string]any{"credited": c.Account, "cents": c.Cents})
		return resp, idem.Effect{Writes: []types.TransactWriteItem{w}}, err
	}))
	if err != nil {
		panic(err)
	}
	for _, d := range []struct{ key, body string }{
		{"k-1", `{"account":"acc-9","cents":500}`},
		{"k-1", `{"account":"acc-9","cents":500}`},
		{"k-2", `{"account":"acc-9","cents":"500"}`},
	} {
		e := events.APIGatewayV2HTTPRequest{Version: "2.0", RawPath: "/webhooks/credits", Body: d.body,
			Headers: map[string]string{"idempotency-key": d.key}}
		e.RequestContext.HTTP.Method = "POST"
		resp, _ := r.HandleV2(ctx, e)
		fmt.Printf("%d replayed=%v %s\n", resp.StatusCode, resp.Headers["Idempotent-Replayed"] == "true", resp.Body)
	}
	// Output:
	// 200 replayed=false {"cents":500,"credited":"acc-9"}
	// 200 replayed=true {"cents":500,"credited":"acc-9"}
	// 400 replayed=false {"type":"about:blank","title":"Bad Request","status":400,"detail":"the body does not decode into the handler's type: json: cannot unmarshal string into Go struct field credit.cents of type int64"}
}

// A debit webhook whose condition refuses an overdraft records the refusal
// as its answer, a 402: the retry gets the same 402, replayed, instead of
// a 409 until the sender gives up.
func ExampleReject() {
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
	r, err := webhook.New(store, func(ctx context.Context, req webhook.Request) (webhook.Response, idem.Effect, error) {
		w, err := idem.Update(env.Accounts, map[string]string{"account": "acc-9"},
			expression.Add(expression.Name("balance"), expression.Value(-500)),
			expression.Name("balance").GreaterThanEqual(expression.Value(500)))
		return webhook.Response{Body: []byte("debited")}, idem.Effect{
			Writes: []types.TransactWriteItem{w},
			Rejected: webhook.Reject(func(*idem.RejectedError) webhook.Response {
				return webhook.Response{Status: 402, Body: []byte("insufficient funds")}
			}),
		}, err
	})
	if err != nil {
		panic(err)
	}
	req := idemtest.HTTPRequest("POST", "/debits", `{"account":"acc-9","cents":500}`, map[string]string{"Idempotency-Key": "debit-1"})
	for _, d := range idemtest.Replay(ctx, 2, r.HandleV2, req) {
		fmt.Printf("%d replayed=%v %s\n", d.Response.StatusCode, d.Response.Headers["Idempotent-Replayed"] == "true", d.Response.Body)
	}
	// Output:
	// 402 replayed=false insufficient funds
	// 402 replayed=true insufficient funds
}

// A credits webhook served through net/http, as lambdaurl.Start, the
// Lambda Web Adapter or a server on ECS serves it, delivered three times:
// one credit, and the first answer replayed byte for byte.
func ExampleMux_ServeHTTP() {
	ctx := context.Background()
	env, err := idemtest.Start(ctx) // a local DynamoDB, as in tests
	if err != nil {
		fmt.Println(err)
		return
	}
	var seen idemtest.Outcomes
	store, err := idem.New(env.Client, env.Processed, seen.Option, func(o *idem.Options) { o.Logger = slog.New(slog.DiscardHandler) })
	if err != nil {
		panic(err)
	}
	credits, err := webhook.New(store, exampleCredits(env.Accounts))
	if err != nil {
		panic(err)
	}
	mux := webhook.Mux{"POST /webhooks/credits": credits} // lambdaurl.Start(mux), or http.ListenAndServe(addr, mux)
	req, err := http.NewRequest("POST", "/webhooks/credits", strings.NewReader(`{"account":"acc-9","cents":500}`))
	if err != nil {
		panic(err)
	}
	req.Header.Set("Idempotency-Key", "evt_http_1")
	for _, d := range idemtest.Replay(ctx, 3, idemtest.ServeHTTP(mux), req) {
		body, _ := io.ReadAll(d.Response.Body)
		fmt.Printf("%d %v %s\n", d.Response.StatusCode, d.Response.Header, body)
	}
	fmt.Println(seen.All())
	// Output:
	// 200 map[Content-Type:[application/json]] {"cents":500,"credited":"acc-9"}
	// 200 map[Content-Type:[application/json] Idempotent-Replayed:[true]] {"cents":500,"credited":"acc-9"}
	// 200 map[Content-Type:[application/json] Idempotent-Replayed:[true]] {"cents":500,"credited":"acc-9"}
	// map[Duplicate:2 Processed:1]
}

// The same webhook behind an Application Load Balancer whose target group
// sends multi-value headers: each answer fills multiValueHeaders, which
// such a target group reads, and a status description.
func ExampleMux_HandleALB() {
	ctx := context.Background()
	env, err := idemtest.Start(ctx) // a local DynamoDB, as in tests
	if err != nil {
		fmt.Println(err)
		return
	}
	var seen idemtest.Outcomes
	store, err := idem.New(env.Client, env.Processed, seen.Option, func(o *idem.Options) { o.Logger = slog.New(slog.DiscardHandler) })
	if err != nil {
		panic(err)
	}
	credits, err := webhook.New(store, exampleCredits(env.Accounts))
	if err != nil {
		panic(err)
	}
	mux := webhook.Mux{"POST /webhooks/credits": credits} // lambda.Start(mux.HandleALB)
	req := idemtest.ALBMultiValue(idemtest.ALBRequest("POST", "/webhooks/credits", `{"account":"acc-9","cents":500}`,
		map[string]string{"Content-Type": "application/json", "Idempotency-Key": "evt_alb_1"}))
	for _, d := range idemtest.Replay(ctx, 3, mux.HandleALB, req) {
		b, _ := json.Marshal(d.Response)
		fmt.Println(string(b))
	}
	fmt.Println(seen.All())
	// Output:
	// {"statusCode":200,"statusDescription":"200 OK","headers":null,"multiValueHeaders":{"Content-Type":["application/json"]},"body":"{\"cents\":500,\"credited\":\"acc-9\"}","isBase64Encoded":false}
	// {"statusCode":200,"statusDescription":"200 OK","headers":null,"multiValueHeaders":{"Content-Type":["application/json"],"Idempotent-Replayed":["true"]},"body":"{\"cents\":500,\"credited\":\"acc-9\"}","isBase64Encoded":false}
	// {"statusCode":200,"statusDescription":"200 OK","headers":null,"multiValueHeaders":{"Content-Type":["application/json"],"Idempotent-Replayed":["true"]},"body":"{\"cents\":500,\"credited\":\"acc-9\"}","isBase64Encoded":false}
	// map[Duplicate:2 Processed:1]
}

// exampleCredits credits {"account", "cents"} in accounts.
func exampleCredits(accounts string) webhook.Handler {
	type credit struct {
		Account string `json:"account"`
		Cents   int64  `json:"cents"`
	}
	return webhook.JSONHandler(func(ctx context.Context, c credit, req webhook.Request) (webhook.Response, idem.Effect, error) {
		w, err := idem.Update(accounts, map[string]string{"account": c.Account}, expression.Add(expression.Name("balance"), expression.Value(c.Cents)))
		if err != nil {
			return webhook.Response{}, idem.Effect{}, err
		}
		resp, err := webhook.JSON(200, map[string]any{"credited": c.Account, "cents": c.Cents})
		return resp, idem.Effect{Writes: []types.TransactWriteItem{w}}, err
	})
}
