package webhook_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"time"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/ssm"

	"github.com/idemkit/kit/idem"
	"github.com/idemkit/kit/idem/webhook"
)

func ExampleStripeVerifier() {
	now := time.Unix(1_750_000_000, 0)
	v := &webhook.StripeVerifier{Secrets: []string{"whsec_old", "whsec_new"}, Now: func() time.Time { return now }}
	body := []byte(`{"id":"evt_1","type":"payment_intent.succeeded"}`)

	fresh := webhook.Header{"Stripe-Signature": webhook.StripeSignature("whsec_new", now, body)}
	stale := webhook.Header{"Stripe-Signature": webhook.StripeSignature("whsec_new", now.Add(-10*time.Minute), body)}
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

// A Stripe receiver in a function's main: verify, key on the event id,
// describe the effect, answer. (Compiled, not run: it needs AWS.)
func ExampleNew() {
	ctx := context.Background()
	cfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		log.Fatal(err)
	}
	store, err := idem.New(dynamodb.NewFromConfig(cfg), os.Getenv("PROCESSED_TABLE"))
	if err != nil {
		log.Fatal(err)
	}
	secrets, err := webhook.SecretEnv{Parameters: ssm.NewFromConfig(cfg)}.Load(ctx, "STRIPE_WEBHOOK_SECRET")
	if err != nil {
		log.Fatal(err)
	}
	r, err := webhook.New(store, func(ctx context.Context, req webhook.Request) (webhook.Effect, error) {
		resp, err := webhook.JSON(200, map[string]string{"received": req.Key})
		return webhook.Effect{Response: resp}, err
	}, webhook.Stripe(secrets...))
	if err != nil {
		log.Fatal(err)
	}
	lambda.Start(webhook.Mux{"POST /webhooks/stripe": r}.HandleV2)
}
