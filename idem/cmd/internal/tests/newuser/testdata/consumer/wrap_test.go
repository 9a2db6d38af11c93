package consumer_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/idemkit/kit/idem"
	"github.com/idemkit/kit/idem/idemtest"
)

func TestEventBridgeCreditOnce(t *testing.T) {
	env := idemtest.NewEnv(t)
	type order struct {
		Account string
		Cents   int64
	}
	handle, err := idem.Wrap(env.Store(t), func(e events.EventBridgeEvent) (string, error) { return e.ID, nil },
		func(_ context.Context, e events.EventBridgeEvent) (string, idem.Effect, error) {
			var o order
			if err := json.Unmarshal(e.Detail, &o); err != nil {
				return "", idem.Effect{}, err
			}
			eff, err := credit(env, o.Account, o.Cents)
			return "credited", eff, err
		})
	if err != nil {
		t.Fatal(err)
	}
	event, _ := idemtest.EventBridgeEvent("shop", "OrderPaid", order{"acc-1", 500})
	last := idemtest.Replay(context.Background(), 3, handle, event)[2]
	if last.Err != nil || last.Response != "credited" || env.Balance(t, "acc-1") != 500 || env.Outcomes.Count(idem.Duplicate) != 2 {
		t.Fatalf("want one credit of 500 and the answer replayed, got %q %v, %d and %v", last.Response, last.Err, env.Balance(t, "acc-1"), env.Outcomes.All())
	}
}
