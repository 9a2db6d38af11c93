package idem_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemkit/kit/idem"
	"github.com/idemkit/kit/idem/idemtest"
)

// TestFaultsNeverApplyTwice delivers messages through a client whose
// requests are throttled, fail, reset, or lose their committed answer, and
// redelivers every failure until it succeeds: each credit must land once.
func TestFaultsNeverApplyTwice(t *testing.T) {
	const messages, workers = 200, 8
	faults := &idemtest.Faults{Seed: 7, Rates: map[idemtest.FaultKind]float64{
		idemtest.FaultThrottle: 0.07, idemtest.FaultServerError: 0.07, idemtest.FaultReset: 0.07, idemtest.FaultLostResponse: 0.07,
		idemtest.FaultTruncatedResponse: 0.07, idemtest.FaultTransactionConflict: 0.07, idemtest.FaultReplicatedConflict: 0.03,
	}}
	e := newEnv(t)
	// The SDK's standard retryer (its attempts, its retry quota, one
	// ClientRequestToken across a call's attempts) with waits of at most
	// 20 ms × 2^attempt instead of up to 20 s, and the Store's own backoff
	// as short: the waits change how long the test takes, not what it
	// proves.
	quick := func(o *dynamodb.Options) {
		o.Retryer = retry.NewStandard(func(so *retry.StandardOptions) {
			so.Backoff = retry.BackoffDelayerFunc(func(attempt int, _ error) (time.Duration, error) {
				return rand.N(20 * time.Millisecond << min(attempt, 6)), nil
			})
		})
	}
	store, err := idem.New(idemtest.Client(idemtest.Endpoint(t), faults.Option, quick), e.processed, func(o *idem.Options) {
		o.BackoffBase, o.BackoffMax = time.Millisecond, 20*time.Millisecond
	})
	if err != nil {
		t.Fatal(err)
	}
	// Each message is delivered 1 to 3 times, shuffled, and again after
	// every failure.
	var work []int
	for i := range messages {
		for range 1 + i%3 {
			work = append(work, i)
		}
	}
	rand.Shuffle(len(work), func(i, j int) { work[i], work[j] = work[j], work[i] })
	var (
		mu       sync.Mutex
		outcomes = map[idem.Outcome]int{}
		done     = make([]bool, messages)
		wg       sync.WaitGroup
		queue    = make(chan int, len(work))
	)
	for _, i := range work {
		queue <- i
	}
	pending := len(work)
	for range workers {
		wg.Go(func() {
			for i := range queue {
				m := idem.Message{ID: fmt.Sprint("evt_", i), Source: "chaos", Payload: []byte(fmt.Sprint(i))}
				res, err := store.Process(context.Background(), m, func(context.Context, idem.Message) (idem.Effect, error) {
					return idem.Effect{Writes: []types.TransactWriteItem{e.credit(fmt.Sprint("acc-", i%5), i+1)}}, nil
				})
				mu.Lock()
				outcomes[idem.OutcomeOf(res, err)]++
				if err != nil {
					queue <- i // redeliver; the queue holds room for it
					mu.Unlock()
					continue
				}
				done[i] = true
				pending--
				if pending == 0 {
					close(queue)
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	want := make([]int, 5)
	for i := range messages {
		want[i%5] += i + 1
		if !done[i] {
			t.Errorf("evt_%d never processed", i)
		}
	}
	for a := range 5 {
		if got := e.balance(t, fmt.Sprint("acc-", a)); got != want[a] {
			t.Errorf("acc-%d: want %d, got %d (double or lost effect)", a, want[a], got)
		}
	}
	counts := faults.Counts()
	for _, k := range idemtest.FaultKinds {
		if counts[k] == 0 {
			t.Errorf("no %s fault injected in %d requests", k, faults.Requests())
		}
	}
	t.Logf("deliveries %d, requests %d, faults %v, outcomes %v", len(work), faults.Requests(), counts, outcomes)
}
