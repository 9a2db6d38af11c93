package consumer_test

import (
	"context"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/idemkit/kit/idem"
	"github.com/idemkit/kit/idem/idemtest"
	"github.com/idemkit/kit/idem/sqsconsumer"
)

func TestSQSCreditOnce(t *testing.T) {
	env := idemtest.NewEnv(t)
	store := env.Store(t)
	type order struct {
		Account string `json:"account"`
		Cents   int64  `json:"cents"`
	}
	handle, err := sqsconsumer.New(store, sqsconsumer.JSONHandler(func(_ context.Context, o order, _ events.SQSMessage) (idem.Effect, error) {
		return credit(env, o.Account, o.Cents)
	}))
	if err != nil {
		t.Fatal(err)
	}
	msg := idemtest.SQSMessage("credits", `{"account":"acc-1","cents":500}`, map[string]string{"IdempotencyKey": "evt-1"})
	for _, d := range idemtest.Replay(context.Background(), 3, handle, idemtest.SQSEvent(msg)) {
		if d.Err != nil || len(d.Response.BatchItemFailures) > 0 {
			t.Fatalf("delivery failed: %v %v", d.Response, d.Err)
		}
	}
	if env.Balance(t, "acc-1") != 500 || env.Outcomes.Count(idem.Processed) != 1 || env.Outcomes.Count(idem.Duplicate) != 2 {
		t.Fatalf("want one credit of 500, got %d and %v", env.Balance(t, "acc-1"), env.Outcomes.All())
	}
}
