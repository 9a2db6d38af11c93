package main

// The hot-item section's queue: one in memory, shared by a run's
// environments, as one SQS queue feeds every environment of a function.
// An environment takes up to its line's batch of messages (fewer when
// fewer are waiting); a message its delivery failed comes back at once,
// ahead of the messages not yet received (no visibility timeout, as the
// issue measured), its receive count one more, and the failure counts as
// a delivery failed to the sender.

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"
)

// hotMaxReceives stops a run whose message keeps failing: the line is
// broken, and the run would not end.
const hotMaxReceives = 1000

type hotQueue struct {
	msgs        []message
	index       map[string]int // by message id
	batch       int
	maxReceives int

	mu       sync.Mutex
	cond     *sync.Cond
	ready    []int // messages waiting, the next first
	done     int
	receives []int
	sent     []time.Time // each message's first receive
	settled  []time.Time // when a delivery of it first succeeded
	failed   int
	err      error
}

func newHotQueue(msgs []message, batch int) *hotQueue {
	q := &hotQueue{msgs: msgs, index: map[string]int{}, batch: max(batch, 1), maxReceives: hotMaxReceives,
		receives: make([]int, len(msgs)), sent: make([]time.Time, len(msgs)), settled: make([]time.Time, len(msgs))}
	q.cond = sync.NewCond(&q.mu)
	for i, m := range msgs {
		q.index[m.id] = i
		q.ready = append(q.ready, i)
	}
	return q
}

// run has each deliverer, an environment, take batches until every
// message is credited; each delivery gets its own deadline.
func (q *hotQueue) run(ctx context.Context, delivers []hotDeliver, deadline time.Duration) error {
	var wg sync.WaitGroup
	for _, d := range delivers {
		wg.Go(func() {
			for {
				batch := q.take()
				if batch == nil {
					return
				}
				dctx, cancel := context.WithTimeout(ctx, deadline)
				failed := d(dctx, batch)
				cancel()
				q.settle(batch, failed)
			}
		})
	}
	wg.Wait()
	return q.err
}

// take is the next batch, each message with its receive count in
// attempt; nil once every message is credited or the run failed.
func (q *hotQueue) take() []message {
	q.mu.Lock()
	defer q.mu.Unlock()
	for len(q.ready) == 0 && q.done < len(q.msgs) && q.err == nil {
		q.cond.Wait()
	}
	if len(q.ready) == 0 || q.err != nil {
		return nil
	}
	n := min(q.batch, len(q.ready))
	now := time.Now()
	batch := make([]message, n)
	for k, i := range q.ready[:n] {
		q.receives[i]++
		if q.sent[i].IsZero() {
			q.sent[i] = now
		}
		if q.receives[i] > q.maxReceives {
			q.err = fmt.Errorf("%s failed %d deliveries: the line never credits it", q.msgs[i].id, q.maxReceives)
			q.cond.Broadcast()
			return nil
		}
		batch[k] = q.msgs[i]
		batch[k].attempt = q.receives[i]
	}
	q.ready = q.ready[n:]
	return batch
}

// settle marks batch delivered but for failed, which go back to the
// front of the queue.
func (q *hotQueue) settle(batch, failed []message) {
	q.mu.Lock()
	defer q.mu.Unlock()
	now := time.Now()
	var back []int
	for _, m := range batch {
		i := q.index[m.id]
		if slices.ContainsFunc(failed, func(f message) bool { return f.id == m.id }) {
			q.failed++
			back = append(back, i)
			continue
		}
		if q.settled[i].IsZero() {
			q.settled[i] = now
			q.done++
		}
	}
	q.ready = append(back, q.ready...)
	q.cond.Broadcast()
}

// figures are the run's wall time, each credit's time and the failed
// deliveries.
func (q *hotQueue) figures() hotRun {
	q.mu.Lock()
	defer q.mu.Unlock()
	run := hotRun{messages: len(q.msgs), failed: q.failed}
	var first, last time.Time
	for i := range q.msgs {
		if first.IsZero() || q.sent[i].Before(first) {
			first = q.sent[i]
		}
		if q.settled[i].After(last) {
			last = q.settled[i]
		}
		run.credit = append(run.credit, q.settled[i].Sub(q.sent[i]))
	}
	run.wall = last.Sub(first)
	return run
}
