package idem_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemkit/kit/idem"
	"github.com/idemkit/kit/idem/idemtest"
)

// An EventBridge event, retried by EventBridge or re-sent by a rule,
// credits once; every delivery gets the first answer back.
func ExampleWrap_eventBridge() {
	ctx := context.Background()
	env, err := idemtest.Start(ctx) // a local DynamoDB, as in tests
	if err != nil {
		fmt.Println(err)
		return
	}
	client, processed, accounts := env.Client, env.Processed, env.Accounts
	store, err := idem.New(client, processed, func(o *idem.Options) {})
	if err != nil {
		fmt.Println(err)
		return
	}
	type credited struct {
		Account string `json:"account"`
		Cents   int    `json:"cents"`
	}
	handle, err := idem.Wrap(store, func(e events.EventBridgeEvent) (string, error) { return e.ID, nil },
		func(ctx context.Context, e events.EventBridgeEvent) (credited, idem.Effect, error) {
			var c credited
			if err := json.Unmarshal(e.Detail, &c); err != nil {
				return c, idem.Effect{}, err
			}
			w, err := idem.Update(accounts, map[string]string{"account": c.Account}, expression.Add(expression.Name("balance"), expression.Value(c.Cents)))
			return c, idem.Effect{Writes: []types.TransactWriteItem{w}}, err
		}, func(o *idem.WrapOptions[events.EventBridgeEvent]) { o.Source = "payments" })
	if err != nil {
		fmt.Println(err)
		return
	}
	event := events.EventBridgeEvent{ID: "7bf73129-1428-4cd3-a780-95db273d1602", Source: "shop", DetailType: "PaymentSucceeded",
		Detail: json.RawMessage(`{"account":"acc-1","cents":250}`)}
	for range 2 {
		fmt.Println(handle(ctx, event))
	}
	// Output:
	// {acc-1 250} <nil>
	// {acc-1 250} <nil>
}

// A direct invoke (lambda.Invoke, a Step Functions task) whose payload
// carries its own request id: a caller's retry gets the first receipt.
func ExampleWrap_directInvoke() {
	ctx := context.Background()
	env, err := idemtest.Start(ctx) // a local DynamoDB, as in tests
	if err != nil {
		fmt.Println(err)
		return
	}
	client, processed, accounts := env.Client, env.Processed, env.Accounts
	store, err := idem.New(client, processed, func(o *idem.Options) {})
	if err != nil {
		fmt.Println(err)
		return
	}
	type refund struct {
		RequestID string `json:"requestId"`
		Account   string `json:"account"`
		Cents     int    `json:"cents"`
	}
	type receipt struct {
		Refunded string `json:"refunded"`
	}
	handle, err := idem.Wrap(store, func(r refund) (string, error) { return r.RequestID, nil },
		func(ctx context.Context, r refund) (receipt, idem.Effect, error) {
			w, err := idem.Update(accounts, map[string]string{"account": r.Account}, expression.Add(expression.Name("balance"), expression.Value(-r.Cents)))
			return receipt{Refunded: fmt.Sprintf("%s: %d cents", r.RequestID, r.Cents)}, idem.Effect{Writes: []types.TransactWriteItem{w}}, err
		}, func(o *idem.WrapOptions[refund]) { o.Source = "refunds" })
	if err != nil {
		fmt.Println(err)
		return
	}
	for range 2 {
		fmt.Println(handle(ctx, refund{RequestID: "req-42", Account: "acc-2", Cents: 300}))
	}
	_, err = handle(ctx, refund{RequestID: "req-42", Account: "acc-2", Cents: 999})
	fmt.Println(errors.Is(err, idem.ErrKeyReuse))
	// Output:
	// {req-42: 300 cents} <nil>
	// {req-42: 300 cents} <nil>
	// true
}

// TestWrap: bad keys and constructions are errors, a Duplicate replays
// the stored answer (not the handler's new one), a recorded rejection
// answers with Effect.Rejected's JSON.
func TestWrap(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	type ev struct{ ID, Account string }
	key := func(v ev) (string, error) { return v.ID, nil }
	runs := 0
	h := func(ctx context.Context, v ev) (string, idem.Effect, error) {
		runs++
		return fmt.Sprint("run ", runs), idem.Effect{Writes: []types.TransactWriteItem{e.credit(v.Account, 1)}}, nil
	}
	handle, err := idem.Wrap(e.store, key, h)
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []string{"run 1", "run 1"} {
		if got, err := handle(ctx, ev{"a", "acc-w"}); got != want || err != nil {
			t.Errorf("delivery %d: want %q, got %q %v", i, want, got, err)
		}
	}
	// The redelivery reaches the environment that settled it: the read of
	// its claim answers it before h runs.
	if runs != 1 || e.balance(t, "acc-w") != 1 {
		t.Errorf("want one run and one credit, got %d runs, balance %d", runs, e.balance(t, "acc-w"))
	}
	if _, err := handle(ctx, ev{"", "acc-w"}); !errors.Is(err, idem.ErrInvalid) || !strings.Contains(err.Error(), "key is empty") {
		t.Errorf("empty key: %v", err)
	}
	panicky, _ := idem.Wrap(e.store, func(ev) (string, error) { panic("no key here") }, h)
	var pe *idem.PanicError
	if _, err := panicky(ctx, ev{"b", "acc-w"}); !errors.As(err, &pe) {
		t.Errorf("a panicking key function: want a *PanicError, got %v", err)
	}
	rejecting, _ := idem.Wrap(e.store, key, func(ctx context.Context, v ev) (string, idem.Effect, error) {
		return "applied", idem.Effect{Writes: []types.TransactWriteItem{e.debit("acc-none", 5)}, Rejected: func(*idem.RejectedError) ([]byte, error) { return []byte(`"refused"`), nil }}, nil
	})
	for range 2 {
		if got, err := rejecting(ctx, ev{"c", "acc-none"}); got != "refused" || err != nil {
			t.Errorf("rejected: want \"refused\", got %q %v", got, err)
		}
	}
	for _, tc := range []struct {
		name string
		make func() error
	}{
		{"nil store", func() error { _, err := idem.Wrap(nil, key, h); return err }},
		{"nil key", func() error { _, err := idem.Wrap(e.store, nil, h); return err }},
		{"nil handler", func() error { _, err := idem.Wrap[ev, string](e.store, key, nil); return err }},
		{"blank source", func() error {
			_, err := idem.Wrap(e.store, key, h, func(o *idem.WrapOptions[ev]) { o.Source = "  " })
			return err
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.make(); err == nil {
				t.Error("want an error")
			}
		})
	}
}

// TestWrapAnswersAreTheStoredOnes: a duplicate gets exactly the stored
// answer, never merged with this delivery's; an empty rejection answers
// the zero value; a rejection whose bytes are no R commits nothing.
func TestWrapAnswersAreTheStoredOnes(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	type answer struct {
		A string `json:"a"`
		B string `json:"b,omitempty"`
	}
	type ev struct{ ID string }
	n := 0
	handle, err := idem.Wrap(e.store, func(v ev) (string, error) { return v.ID, nil },
		func(ctx context.Context, v ev) (answer, idem.Effect, error) {
			n++
			if n == 1 {
				return answer{A: "first"}, idem.Effect{Writes: []types.TransactWriteItem{e.credit("acc-m", 1)}}, nil
			}
			return answer{A: "second", B: "not stored"}, idem.Effect{Writes: []types.TransactWriteItem{e.credit("acc-m", 1)}}, nil
		})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		if got, err := handle(ctx, ev{"m"}); err != nil || got != (answer{A: "first"}) {
			t.Errorf("delivery %d: want the stored {first}, got %+v %v", i, got, err)
		}
	}
	for _, tc := range []struct {
		name     string
		rejected []byte
		want     answer
		wantErr  bool
	}{
		{"empty rejection", nil, answer{}, false},
		{"rejection that is no answer", []byte("not json"), answer{}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h, err := idem.Wrap(e.store, func(v ev) (string, error) { return v.ID, nil },
				func(ctx context.Context, v ev) (answer, idem.Effect, error) {
					return answer{A: "uncommitted"}, idem.Effect{Writes: []types.TransactWriteItem{e.debit("acc-none", 5)},
						Rejected: func(*idem.RejectedError) ([]byte, error) { return tc.rejected, nil }}, nil
				})
			if err != nil {
				t.Fatal(err)
			}
			claims := e.claimCount(t)
			for range 2 {
				got, err := h(ctx, ev{"r-" + tc.name})
				var he *idem.HandlerError
				if tc.wantErr {
					if !errors.As(err, &he) || !strings.Contains(err.Error(), "Effect.Rejected") {
						t.Errorf("want a *HandlerError naming Effect.Rejected, got %+v %v", got, err)
					}
					continue
				}
				if err != nil || got != tc.want {
					t.Errorf("want %+v, got %+v %v", tc.want, got, err)
				}
			}
			if tc.wantErr && e.claimCount(t) != claims {
				t.Errorf("a rejection no duplicate could read was recorded")
			}
		})
	}
}

// TestWrapLease: under WrapOptions.Lease, an event in flight in another
// environment returns a retryable *LeaseHeldError and runs nothing.
func TestWrapLease(t *testing.T) {
	e := newEnv(t)
	type event struct{ ID string }
	entered, release := make(chan struct{}), make(chan struct{})
	var runs atomic.Int64
	wrap := func(store *idem.Store) func(context.Context, event) (string, error) {
		handle, err := idem.Wrap(store, func(ev event) (string, error) { return ev.ID, nil },
			func(ctx context.Context, ev event) (string, idem.Effect, error) {
				runs.Add(1)
				if _, ok := idem.LeaseFromContext(ctx); !ok {
					return "", idem.Effect{}, errors.New("no lease")
				}
				close(entered)
				<-release
				return "done", idem.Effect{Writes: []types.TransactWriteItem{e.credit("acc-9", 500)}}, nil
			}, func(o *idem.WrapOptions[event]) { o.Source, o.Lease = "events", &idem.LeaseOptions{} })
		if err != nil {
			t.Fatal(err)
		}
		return handle
	}
	elsewhere, err := idem.New(e.client, e.processed)
	if err != nil {
		t.Fatal(err)
	}
	handle, other := wrap(e.store), wrap(elsewhere)
	first := make(chan error)
	go func() { _, err := handle(context.Background(), event{"e-1"}); first <- err }()
	<-entered
	if _, err := other(context.Background(), event{"e-1"}); !errors.Is(err, idem.ErrLeaseHeld) || !errors.Is(err, idem.ErrRetryable) {
		t.Errorf("in flight: want a retryable ErrLeaseHeld, got %v", err)
	}
	close(release)
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	if got, err := handle(context.Background(), event{"e-1"}); err != nil || got != "done" || runs.Load() != 1 {
		t.Errorf("after: want the replayed answer and 1 run, got %q, %v, %d", got, err, runs.Load())
	}
}
