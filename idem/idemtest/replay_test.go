package idemtest_test

import (
	"context"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemkit/kit/idem"
	"github.com/idemkit/kit/idem/idemtest"
	"github.com/idemkit/kit/idem/sqsconsumer"
)

func TestMain(m *testing.M) { idemtest.Main(m) }

type credit struct {
	Account string `json:"account"`
	Cents   int64  `json:"cents"`
}

func creditHandler(env *idemtest.Env) sqsconsumer.Handler {
	return sqsconsumer.JSONHandler(func(_ context.Context, c credit, _ events.SQSMessage) (idem.Effect, error) {
		w, err := idem.Update(env.Accounts, map[string]string{"account": c.Account}, expression.Add(expression.Name("balance"), expression.Value(c.Cents)))
		return idem.Effect{Writes: []types.TransactWriteItem{w}}, err
	})
}

var creditMsg = idemtest.SQSMessage("credits", `{"account":"acc-1","cents":500}`, map[string]string{"IdempotencyKey": "evt-1"})

// TestReplayAcrossEnvironments: one message delivered at once by four
// environments, each its own Store and client, is applied once, and the
// others are Duplicates found in DynamoDB, not answers coalesced in one
// process.
func TestReplayAcrossEnvironments(t *testing.T) {
	env := idemtest.NewEnv(t)
	var handles []func(context.Context, events.SQSEvent) (events.SQSEventResponse, error)
	for _, store := range env.Environments(t, 4) {
		h, err := sqsconsumer.New(store, creditHandler(env))
		if err != nil {
			t.Fatal(err)
		}
		handles = append(handles, h)
	}
	for i, d := range idemtest.ReplayAcross(context.Background(), handles, idemtest.SQSEvent(creditMsg)) {
		if d.Err != nil || len(d.Response.BatchItemFailures) > 0 {
			t.Errorf("environment %d: want the record done, got %+v %v", i, d.Response, d.Err)
		}
	}
	if got := env.Balance(t, "acc-1"); got != 500 {
		t.Errorf("want one credit of 500, got %d", got)
	}
	if p, d := env.Outcomes.Count(idem.Processed), env.Outcomes.Count(idem.Duplicate); p != 1 || d != 3 {
		t.Errorf("want 1 Processed and 3 Duplicates, got %v", env.Outcomes.All())
	}
	// Each environment made its own transaction: none was answered by
	// another's in memory.
	if n := env.Calls.Count("TransactWriteItems"); n < 4 {
		t.Errorf("want at least 4 transactions (one per environment), got %d", n)
	}
}

// TestDeliverModes: both modes run from one table without naming Replay's
// type parameters, and each applies once.
func TestDeliverModes(t *testing.T) {
	for _, mode := range []idemtest.Mode{idemtest.OneAfterAnother, idemtest.AtOnce} {
		t.Run(mode.String(), func(t *testing.T) {
			env := idemtest.NewEnv(t)
			h, err := sqsconsumer.New(env.Store(t), creditHandler(env))
			if err != nil {
				t.Fatal(err)
			}
			for _, d := range idemtest.Deliver(context.Background(), mode, 3, h, idemtest.SQSEvent(creditMsg)) {
				if d.Err != nil || len(d.Response.BatchItemFailures) > 0 {
					t.Fatalf("delivery failed: %+v %v", d.Response, d.Err)
				}
			}
			if env.Balance(t, "acc-1") != 500 || env.Outcomes.Count(idem.Processed) != 1 || env.Outcomes.Count(idem.Duplicate) != 2 {
				t.Errorf("want one credit and 2 Duplicates, got %d and %v", env.Balance(t, "acc-1"), env.Outcomes.All())
			}
		})
	}
}
