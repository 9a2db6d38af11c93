package consumer_test

import (
	"context"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/idemkit/kit/idem"
	"github.com/idemkit/kit/idem/idemtest"
	"github.com/idemkit/kit/idem/sqsconsumer"
)

// TestFourEnvironmentsAtOnce: one message delivered at the same moment to
// four environments of the function, each with its own Store, applies once.
func TestFourEnvironmentsAtOnce(t *testing.T) {
	env := idemtest.NewEnv(t)
	type order struct {
		Account string `json:"account"`
		Cents   int64  `json:"cents"`
	}
	var handles []func(context.Context, events.SQSEvent) (events.SQSEventResponse, error)
	for _, store := range env.Environments(t, 4) {
		h, err := sqsconsumer.New(store, sqsconsumer.JSONHandler(func(_ context.Context, o order, _ events.SQSMessage) (idem.Effect, error) {
			return credit(env, o.Account, o.Cents)
		}))
		if err != nil {
			t.Fatal(err)
		}
		handles = append(handles, h)
	}
	msg := idemtest.SQSMessage("credits", `{"account":"acc-1","cents":500}`, map[string]string{"IdempotencyKey": "evt-1"})
	for _, d := range idemtest.ReplayAcross(context.Background(), handles, idemtest.SQSEvent(msg)) {
		if d.Err != nil || len(d.Response.BatchItemFailures) > 0 {
			t.Fatalf("a delivery failed: %v %v", d.Response, d.Err)
		}
	}
	if env.Balance(t, "acc-1") != 500 || env.Outcomes.Count(idem.Processed) != 1 || env.Outcomes.Count(idem.Duplicate) != 3 {
		t.Fatalf("want one credit of 500 and three duplicates, got %d and %v", env.Balance(t, "acc-1"), env.Outcomes.All())
	}
}
