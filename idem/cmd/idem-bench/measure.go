package main

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemkit/kit/idem/idemtest"
)

// row is one strategy's line of the table.
type row struct {
	name                        string
	callsFirst, callsDup        float64
	p50First, p99First          time.Duration
	p50Dup, p99Dup              time.Duration
	ratio                       float64 // first-delivery p50 over the floor's
	msgsPerSec                  float64
	crashDoubles, raceDoubles   int
	crashMessages, raceMessages int
}

type setup struct {
	strategy strategy
	calls    *idemtest.CallCounter
	client   *dynamodb.Client
	accounts string
}

// latency delivers n new messages one after another, then each again, and
// returns the per-delivery latencies and call counts.
func latency(ctx context.Context, su setup, prefix string, n int) (first, dup []time.Duration, callsFirst, callsDup float64, err error) {
	msgs := make([]message, n)
	for i := range msgs {
		msgs[i] = message{id: fmt.Sprintf("%s-lat-%d", prefix, i), account: fmt.Sprintf("lat-%d", i%10), cents: 1}
	}
	for pass, out := range []*[]time.Duration{&first, &dup} {
		su.calls.Reset()
		for _, m := range msgs {
			start := time.Now()
			if err := su.strategy.deliver(ctx, m, false); err != nil {
				return nil, nil, 0, 0, fmt.Errorf("pass %d, %s: %w", pass, m.id, err)
			}
			*out = append(*out, time.Since(start))
		}
		calls := float64(su.calls.Count("")) / float64(n)
		if pass == 0 {
			callsFirst = calls
		} else {
			callsDup = calls
		}
	}
	return first, dup, callsFirst, callsDup, nil
}

func percentile(d []time.Duration, p float64) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[min(len(s)-1, int(float64(len(s))*p))]
}

// throughput delivers each message 3 times, shuffled, in batches of 10
// whose records run concurrently, as the SQS event source hands them to
// one function; a failed delivery goes back to the queue.
func throughput(ctx context.Context, deliverBatch func(context.Context, []message) []message, prefix string, n int) float64 {
	var queue []message
	for i := range n {
		m := message{id: fmt.Sprintf("%s-tp-%d", prefix, i), account: fmt.Sprintf("tp-%d", i%10), cents: 1}
		queue = append(queue, m, m, m)
	}
	rand.Shuffle(len(queue), func(i, j int) { queue[i], queue[j] = queue[j], queue[i] })
	start := time.Now()
	for len(queue) > 0 {
		batch := queue[:min(10, len(queue))]
		queue = append(queue[len(batch):], deliverBatch(ctx, batch)...)
	}
	return float64(3*n) / time.Since(start).Seconds()
}

// concurrentBatch runs a batch's records at once through a strategy and
// returns the ones that failed.
func concurrentBatch(st strategy) func(context.Context, []message) []message {
	return func(ctx context.Context, batch []message) []message {
		var mu sync.Mutex
		var failed []message
		var wg sync.WaitGroup
		for _, m := range batch {
			wg.Go(func() {
				if err := st.deliver(ctx, m, false); err != nil {
					mu.Lock()
					failed = append(failed, m)
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		return failed
	}
}

// crashWindow fails each message right after its effect, redelivers it
// until it succeeds, and counts the messages credited more than once.
func crashWindow(ctx context.Context, su setup, prefix string, n int) (int, error) {
	for i := range n {
		m := message{id: fmt.Sprintf("%s-crash-%d", prefix, i), account: fmt.Sprintf("%s-crash-%d", prefix, i), cents: 1}
		if err := su.strategy.deliver(ctx, m, true); err != nil && !errors.Is(err, errAfterEffect) {
			return 0, err
		}
		if err := untilDone(ctx, su.strategy, m); err != nil {
			return 0, err
		}
	}
	return countDoubles(ctx, su, prefix+"-crash", n)
}

// race delivers each message 4 times at once and counts the messages
// credited more than once.
func race(ctx context.Context, su setup, prefix string, n int) (int, error) {
	var wg sync.WaitGroup
	errs := make(chan error, 4*n)
	for i := range n {
		m := message{id: fmt.Sprintf("%s-race-%d", prefix, i), account: fmt.Sprintf("%s-race-%d", prefix, i), cents: 1}
		start := make(chan struct{})
		for range 4 {
			wg.Go(func() {
				<-start
				if err := untilDone(ctx, su.strategy, m); err != nil {
					errs <- err
				}
			})
		}
		close(start)
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return 0, err
	}
	return countDoubles(ctx, su, prefix+"-race", n)
}

// untilDone redelivers m until a delivery succeeds, as a queue would.
func untilDone(ctx context.Context, st strategy, m message) error {
	var err error
	for range 50 {
		if err = st.deliver(ctx, m, false); err == nil {
			return nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	return fmt.Errorf("%s never succeeded: %w", m.id, err)
}

func countDoubles(ctx context.Context, su setup, prefix string, n int) (int, error) {
	doubles := 0
	for i := range n {
		out, err := su.client.GetItem(ctx, &dynamodb.GetItemInput{
			TableName: aws.String(su.accounts), ConsistentRead: aws.Bool(true),
			Key: map[string]types.AttributeValue{"account": s(fmt.Sprintf("%s-%d", prefix, i))},
		})
		if err != nil {
			return 0, err
		}
		bal, _ := out.Item["balance"].(*types.AttributeValueMemberN)
		if bal == nil {
			return 0, fmt.Errorf("%s-%d was never credited", prefix, i)
		}
		if v, _ := strconv.Atoi(bal.Value); v > 1 {
			doubles++
		}
	}
	return doubles, nil
}
