package idem_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemkit/kit/idem"
)

// TestBoundedWaitForADeliveryInFlight: a delivery whose key another
// delivery in this process is running waits for it only as long as its
// adapter allows (a webhook answering within API Gateway's limit), then is
// an *InFlightError counted InFlight, having done nothing; unbounded, it
// waits and is the other's Duplicate.
func TestBoundedWaitForADeliveryInFlight(t *testing.T) {
	for _, tc := range []struct {
		name  string
		bound time.Duration // < 0: none
		want  error
	}{
		{"bounded", 50 * time.Millisecond, idem.ErrInFlight},
		{"no wait at all", 0, idem.ErrInFlight},
		{"unbounded", -1, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			entered, release := make(chan struct{}), make(chan struct{})
			runs := 0
			leaderDone := make(chan error, 1)
			go func() {
				_, err := e.store.Process(context.Background(), msg, func(ctx context.Context, m idem.Message) (idem.Effect, error) {
					runs++
					close(entered)
					<-release
					return idem.Effect{Writes: []types.TransactWriteItem{e.credit("acc-9", 500)}}, nil
				})
				leaderDone <- err
			}()
			<-entered
			ctx := context.Background()
			var once sync.Once
			let := func() { once.Do(func() { close(release) }) }
			if tc.bound >= 0 {
				ctx = idem.WithWait(ctx, tc.bound)
				// Long after the bound: a wait that ignored it would end
				// here. Otherwise the leader goes on once the waiting
				// delivery has answered (below).
				time.AfterFunc(2*time.Second, let)
			} else {
				time.AfterFunc(100*time.Millisecond, let)
			}
			start := time.Now()
			res, err := e.store.Process(ctx, msg, func(context.Context, idem.Message) (idem.Effect, error) {
				t.Error("the waiting delivery ran its handler")
				return idem.Effect{}, nil
			})
			waited := time.Since(start)
			let()
			if lerr := <-leaderDone; lerr != nil {
				t.Fatal(lerr)
			}
			var ife *idem.InFlightError
			switch {
			case tc.want == nil && (err != nil || res.Outcome != idem.Duplicate || !res.Cached):
				t.Fatalf("unbounded: want the leader's Duplicate, got %+v %v", res, err)
			case tc.want != nil && (!errors.Is(err, tc.want) || !errors.Is(err, idem.ErrRetryable) || !errors.As(err, &ife) || ife.RetryAfter <= 0):
				t.Fatalf("want a retryable *InFlightError, got %+v %v", res, err)
			case tc.want != nil && waited > tc.bound+time.Second:
				t.Errorf("bounded by %v, waited %v", tc.bound, waited)
			case tc.want != nil && idem.OutcomeOf(res, err) != idem.InFlight:
				t.Errorf("counted %s, want InFlight", idem.OutcomeOf(res, err))
			}
			if got := e.balance(t, "acc-9"); got != 500 || runs != 1 {
				t.Errorf("want one credit of 500 and one run, got %d and %d", got, runs)
			}
		})
	}
}
