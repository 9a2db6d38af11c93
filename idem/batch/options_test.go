package batch_test

import (
	"context"
	"maps"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemkit/kit/idem"
	"github.com/idemkit/kit/idem/idemtest"
	"github.com/idemkit/kit/idem/kafkaconsumer"
	"github.com/idemkit/kit/idem/sqsconsumer"
)

func TestMain(m *testing.M) { idemtest.Main(m) }

// handler is a test's handler, whichever consumer calls it.
type handler func(ctx context.Context) (idem.Effect, error)

// A consumer is a batch consumer built with no options: deliver hands it
// n records of one body that carry key, each at a place of its own (a
// messageId, an offset) and in a lane of its own, and returns how many it
// reported failed.
type consumer struct {
	name  string
	build func(store *idem.Store, h handler) (deliver func(ctx context.Context, key string, n int) int, err error)
}

var consumers = []consumer{
	{"sqsconsumer", func(store *idem.Store, h handler) (func(context.Context, string, int) int, error) {
		fn, err := sqsconsumer.New(store, func(ctx context.Context, _ events.SQSMessage) (idem.Effect, error) { return h(ctx) })
		return func(ctx context.Context, key string, n int) int {
			var ev events.SQSEvent
			for range n {
				ev.Records = append(ev.Records, idemtest.SQSMessage("credits", "{}", map[string]string{sqsconsumer.KeyAttribute: key}))
			}
			resp, _ := fn(ctx, ev)
			return len(resp.BatchItemFailures)
		}, err
	}},
	{"kafkaconsumer", func(store *idem.Store, h handler) (func(context.Context, string, int) int, error) {
		fn, err := kafkaconsumer.New(store, func(ctx context.Context, _ events.KafkaRecord) (idem.Effect, error) { return h(ctx) })
		return func(ctx context.Context, key string, n int) int {
			var recs []events.KafkaRecord
			for i := range n {
				recs = append(recs, idemtest.KafkaRecord("credits", int64(i), int64(10+i), "{}", map[string]string{kafkaconsumer.KeyHeader: key}))
			}
			resp, _ := fn(ctx, idemtest.KafkaEvent(recs...))
			return len(resp.BatchItemFailures)
		}, err
	}},
}

// TestDefaults: a consumer built with no options keys its records by its
// DefaultKey, and keeps a DeadlineMargin of 2 seconds. (The default
// Concurrency, 10, is checked through both consumers by the lane runner's
// TestConcurrency; each consumer's default Source by its own tests.)
func TestDefaults(t *testing.T) {
	for _, c := range consumers {
		t.Run(c.name+"/Key", func(t *testing.T) {
			// Two records at two places with one key: under the DefaultKey
			// (the producer's key first) one effect; under a key of the
			// place, two.
			env := idemtest.NewEnv(t)
			deliver := build(t, c, env.Store(t), credit(env))
			if failed := deliver(context.Background(), "evt-1", 2); failed != 0 {
				t.Fatalf("failed: want none, got %d", failed)
			}
			if got := env.Balance(t, "acc-1"); got != 1 {
				t.Errorf("balance: want 1, got %d", got)
			}
			if got, want := env.Outcomes.All(), map[idem.Outcome]int{idem.Processed: 1, idem.Duplicate: 1}; !maps.Equal(got, want) {
				t.Errorf("outcomes: want %v, got %v", want, got)
			}
		})
		t.Run(c.name+"/DeadlineMargin", func(t *testing.T) {
			// A running record is cut off at half the margin before the
			// deadline: 1 second under a margin of 2.
			env := idemtest.NewEnv(t)
			var got time.Time
			deliver := build(t, c, env.Store(t), func(ctx context.Context) (idem.Effect, error) {
				got, _ = ctx.Deadline()
				return credit(env)(ctx)
			})
			deadline := time.Now().Add(time.Hour)
			ctx, cancel := context.WithDeadline(context.Background(), deadline)
			defer cancel()
			if failed := deliver(ctx, "evt-1", 1); failed != 0 {
				t.Fatalf("failed: want none, got %d", failed)
			}
			if want := deadline.Add(-time.Second); !got.Equal(want) {
				t.Errorf("the handler's deadline: want %v (2s/2 before the invoke's), got %v", want, got)
			}
		})
	}
}

func build(t *testing.T, c consumer, store *idem.Store, h handler) func(context.Context, string, int) int {
	t.Helper()
	deliver, err := c.build(store, h)
	if err != nil {
		t.Fatal(err)
	}
	return deliver
}

// credit adds 1 to acc-1's balance.
func credit(env *idemtest.Env) handler {
	return func(context.Context) (idem.Effect, error) {
		w, err := idem.Update(env.Accounts, map[string]string{"account": "acc-1"}, expression.Add(expression.Name("balance"), expression.Value(1)))
		return idem.Effect{Writes: []types.TransactWriteItem{w}}, err
	}
}
