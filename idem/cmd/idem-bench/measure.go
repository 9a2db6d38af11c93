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
	batchMode                   bool // latency is per batch, in the batch table
	callsFirst, callsDup        float64
	lat                         []latency // by server
	msgsPerSec                  float64
	creditsPerMsg               float64 // credits the throughput run applied per message
	crashDoubles, raceDoubles   int
	crashMessages, raceMessages int
	batches                     [][]batchStat // the SQS adapter's, by server, then by batchScenarios
}

// latency is a strategy's delivery latency on one server.
type latency struct {
	p50First, p99First time.Duration
	p50Dup, p99Dup     time.Duration
	ratio              float64 // first-delivery p50 over the floor's on the same server
}

type setup struct {
	strategy strategy
	calls    *idemtest.CallCounter
	outcomes *idemtest.Outcomes // where the streams count this kit's answers
	client   *dynamodb.Client
	accounts string
}

// latencies delivers n new messages one after another, then each again,
// taking turns between the strategies and, for each, between the servers
// (sus[j][k] is strategy k on server j), so that a change in the shared
// machine's load falls on all of them alike; it fills each row's calls
// (the local server's: the model changes none) and latencies. Batch-mode
// rows are left out: their figures are per batch.
func latencies(ctx context.Context, sus [][]setup, rows []row, n int) error {
	// took[pass][j][k]: first deliveries, then duplicates.
	var took [2][][][]time.Duration
	for pass := range took {
		took[pass] = make([][][]time.Duration, len(sus))
		for j := range sus {
			took[pass][j] = make([][]time.Duration, len(rows))
			for _, su := range sus[j] {
				su.calls.Reset()
			}
		}
		for i := range n {
			for k := range rows {
				if rows[k].batchMode {
					continue
				}
				for j := range sus {
					m := message{id: fmt.Sprintf("s%d.%d-lat-%d", k, j, i), account: fmt.Sprintf("lat-%d", i%10), cents: 1}
					start := time.Now()
					if err := sus[j][k].strategy.deliver(ctx, m, false); err != nil {
						return fmt.Errorf("%s: latency pass %d, %s: %w", rows[k].name, pass, m.id, err)
					}
					took[pass][j][k] = append(took[pass][j][k], time.Since(start))
				}
			}
		}
		for k, su := range sus[0] {
			calls := float64(messageCalls(su.calls)) / float64(n)
			if rows[k].batchMode {
				continue
			} else if pass == 0 {
				rows[k].callsFirst = calls
			} else {
				rows[k].callsDup = calls
			}
		}
	}
	for k := range rows {
		rows[k].lat = make([]latency, len(sus))
		if rows[k].batchMode {
			continue
		}
		for j := range sus {
			first, dup := took[0][j][k], took[1][j][k]
			rows[k].lat[j] = latency{p50First: percentile(first, 0.5), p99First: percentile(first, 0.99), p50Dup: percentile(dup, 0.5), p99Dup: percentile(dup, 0.99)}
		}
	}
	return nil
}

func percentile(d []time.Duration, p float64) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[min(len(s)-1, int(float64(len(s))*p))]
}

// throughputs delivers each message 3 times, shuffled, in batches of 10,
// as the SQS event source hands them to one function; a failed delivery
// goes back to the queue. The strategies take turns, a batch each, and
// each is timed only while it delivers. It fills each row's messages per
// second and credits applied per message (1 when each applied once).
func throughputs(ctx context.Context, sus []setup, rows []row, n, accounts int) error {
	order := make([]int, 0, 3*n)
	for i := range n {
		order = append(order, i, i, i)
	}
	rand.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
	msg := func(k, i int) message {
		return message{id: fmt.Sprintf("s%d-tp-%d", k, i), account: fmt.Sprintf("s%d-tp-%d", k, i%accounts), cents: 1}
	}
	queues := make([][]message, len(sus))
	deliver := make([]func(context.Context, []message) []message, len(sus))
	for k, su := range sus {
		for _, i := range order {
			queues[k] = append(queues[k], msg(k, i))
		}
		deliver[k] = batchDeliverer(su.strategy)
	}
	took := make([]time.Duration, len(sus))
	for busy := true; busy; {
		busy = false
		for k, q := range queues {
			if len(q) == 0 {
				continue
			}
			busy = true
			batch := q[:min(10, len(q))]
			start := time.Now()
			failed := deliver[k](ctx, batch)
			took[k] += time.Since(start)
			queues[k] = append(q[len(batch):], failed...)
		}
	}
	for k, su := range sus {
		credits := 0
		for a := range min(n, accounts) {
			bal, err := balance(ctx, su, msg(k, a).account)
			if err != nil {
				return err
			}
			credits += bal
		}
		rows[k].msgsPerSec = float64(3*n) / took[k].Seconds()
		rows[k].creditsPerMsg = float64(credits) / float64(n)
	}
	return nil
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
		bal, err := balance(ctx, su, fmt.Sprintf("%s-%d", prefix, i))
		if err != nil {
			return 0, err
		}
		if bal == 0 {
			return 0, fmt.Errorf("%s-%d was never credited", prefix, i)
		}
		if bal > 1 {
			doubles++
		}
	}
	return doubles, nil
}

func balance(ctx context.Context, su setup, account string) (int, error) {
	out, err := su.client.GetItem(ctx, &dynamodb.GetItemInput{
		TableName: aws.String(su.accounts), ConsistentRead: aws.Bool(true),
		Key: map[string]types.AttributeValue{"account": s(account)},
	})
	if err != nil {
		return 0, err
	}
	bal, _ := out.Item["balance"].(*types.AttributeValueMemberN)
	if bal == nil {
		return 0, nil
	}
	return strconv.Atoi(bal.Value)
}

// messageCalls is the DynamoDB calls c counted for messages: all of them
// but a Store's one DescribeTable before its first claim (its table's
// replicas, Options.WritesInOneRegion), a cold start's call, not a
// message's.
func messageCalls(c *idemtest.CallCounter) int {
	return c.Count("") - c.Count("DescribeTable")
}
