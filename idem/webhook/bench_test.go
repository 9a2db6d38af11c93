package webhook_test

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemkit/kit/idem"
	"github.com/idemkit/kit/idem/idemtest"
	"github.com/idemkit/kit/idem/webhook"
)

// fakeTx answers every TransactWriteItems in-process: a commit, or, when
// dup is set, the cancellation a duplicate gets. It keeps the last input.
// For CPU benchmarks only.
type fakeTx struct {
	dup  *types.TransactionCanceledException
	last *dynamodb.TransactWriteItemsInput
}

func (f *fakeTx) TransactWriteItems(_ context.Context, in *dynamodb.TransactWriteItemsInput, _ ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error) {
	f.last = in
	if f.dup != nil {
		return nil, f.dup
	}
	return &dynamodb.TransactWriteItemsOutput{}, nil
}

// benchReceiver credits acc-9 through a Store on client; logs are on at
// INFO, as deployed, and metrics discarded, their write being Lambda's.
func benchReceiver(b *testing.B, client idem.TransactWriteAPI, opt func(*webhook.Options)) *webhook.Receiver {
	store, err := idem.New(client, "processed", func(o *idem.Options) {
		o.Logger = slog.New(slog.NewJSONHandler(io.Discard, nil))
	})
	if err != nil {
		b.Fatal(err)
	}
	credit := creditWrite("accounts", "acc-9", 500)
	r, err := webhook.New(store, func(ctx context.Context, req webhook.Request) (webhook.Response, idem.Effect, error) {
		resp, err := webhook.JSON(200, map[string]string{"status": "processed", "id": req.Key})
		return resp, idem.Effect{Writes: []types.TransactWriteItem{credit}}, err
	}, opt)
	if err != nil {
		b.Fatal(err)
	}
	return r
}

// BenchmarkWebhook is the adapter's CPU cost per request, core included,
// DynamoDB answered in-process: body checks, signature, key, the claim's
// transaction built and its answer read, the response encoded or replayed.
func BenchmarkWebhook(b *testing.B) {
	ctx := context.Background()
	signed := func(o *webhook.Options) { o.Verifier = &webhook.HMACVerifier{Secrets: []string{secret}} }
	generic := delivery{body: creditBody, headers: map[string]string{
		"content-type": "application/json", "idempotency-key": "k-1", "user-agent": "bench", "x-forwarded-for": "1.2.3.4",
		"x-signature": idemtest.HMACSignature(secret, []byte(creditBody))}}
	stripeBody := `{"id":"evt_001","type":"payment_intent.succeeded","account":"acc-9","cents":500}`
	stripe := delivery{body: stripeBody, headers: map[string]string{
		"content-type": "application/json", "user-agent": "Stripe/1.0", "x-forwarded-for": "1.2.3.4",
		"stripe-signature": idemtest.StripeSignature("whsec_x", time.Now(), []byte(stripeBody))}}

	// A duplicate's cancellation returns the claim a first delivery put.
	first := &fakeTx{}
	if resp, _ := benchReceiver(b, first, signed).HandleV2(ctx, generic.v2()); resp.StatusCode != 200 {
		b.Fatalf("first delivery: expect 200, got %d %s", resp.StatusCode, resp.Body)
	}
	dup := &fakeTx{dup: &types.TransactionCanceledException{CancellationReasons: []types.CancellationReason{
		{Code: aws.String("ConditionalCheckFailed"), Item: first.last.TransactItems[0].Put.Item},
		{Code: aws.String("None")},
	}}}

	for _, bc := range []struct {
		name string
		r    *webhook.Receiver
		d    delivery
	}{
		{"first", benchReceiver(b, &fakeTx{}, signed), generic},
		{"duplicate", benchReceiver(b, dup, signed), generic},
		{"stripe", benchReceiver(b, &fakeTx{}, webhook.Stripe("whsec_x")), stripe},
	} {
		b.Run(bc.name, func(b *testing.B) {
			ev := bc.d.v2()
			b.ReportAllocs()
			for b.Loop() {
				if resp, _ := bc.r.HandleV2(ctx, ev); resp.StatusCode != 200 {
					b.Fatalf("expect 200, got %d %s", resp.StatusCode, resp.Body)
				}
			}
		})
	}
}
