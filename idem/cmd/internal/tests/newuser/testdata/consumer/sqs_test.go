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
	type order struct {
		Account string `json:"account"`
		Cents   int64  `json:"cents"`
	}
	handle, err := sqsconsumer.New(env.Store(t), sqsconsumer.JSONHandler(func(_ context.Context, o order, _ events.SQSMessage) (idem.Effect, error) {
		return credit(env, o.Account, o.Cents)
	}))
	if err != nil {
		t.Fatal(err)
	}
	msg := idemtest.SQSMessage("credits", `{"account":"acc-1","cents":500}`, map[string]string{"IdempotencyKey": "evt-1"})
	last := idemtest.Replay(context.Background(), 3, handle, idemtest.SQSEvent(msg))[2]
	if last.Err != nil || len(last.Response.BatchItemFailures) > 0 || env.Balance(t, "acc-1") != 500 || env.Outcomes.Count(idem.Duplicate) != 2 {
		t.Fatalf("want one credit of 500 and two duplicates, got %v %v, %d and %v", last.Response, last.Err, env.Balance(t, "acc-1"), env.Outcomes.All())
	}
}
