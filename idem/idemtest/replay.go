package idemtest

import (
	"context"
	"maps"
	"slices"
	"strconv"
	"sync"

	"github.com/aws/aws-lambda-go/events"

	"github.com/idemkit/kit/idem"
)

// Delivery is what one delivery of an event returned.
type Delivery[R any] struct {
	Response R
	Err      error
}

// Replay hands event to handle n times, one after another, as a sender
// that redelivers does (an SQS batch's records with their receive count
// going up by one each time; a Kafka batch's the same records again, each
// delivery a copy of its own), and returns what each delivery returned, in
// order. handle is any of the kit's handlers: an SQS batch handler
// (sqsconsumer.New), a Kafka one (kafkaconsumer.New), a webhook's
// (Receiver.HandleV2, Mux.Handle, HandleALB, or ServeHTTP(mux) for
// net/http), a wrapped one (idem.Wrap), a stream's, or a closure over
// Store.Process.
func Replay[E, R any](ctx context.Context, n int, handle func(context.Context, E) (R, error), event E) []Delivery[R] {
	out := make([]Delivery[R], n)
	for i := range out {
		out[i].Response, out[i].Err = handle(ctx, redelivery(event, i))
	}
	return out
}

// redelivery is event as its delivery i (0 the first): an SQS batch's
// records count it as SQS does, their ApproximateReceiveCount i more than
// the event's own (1 when it has none readable), so that a consumer sees
// a redelivery as one (idem.Message.Attempt). A Kafka batch has no count:
// each delivery is a copy of the same records (kafkaRedelivery). Other
// events are as given.
func redelivery[E any](event E, i int) E {
	if ev, ok := any(event).(events.KafkaEvent); ok {
		return any(kafkaRedelivery(ev)).(E)
	}
	ev, ok := any(event).(events.SQSEvent)
	if !ok || i == 0 {
		return event
	}
	recs := slices.Clone(ev.Records)
	for j := range recs {
		first, err := strconv.Atoi(recs[j].Attributes["ApproximateReceiveCount"])
		if err != nil || first < 1 {
			first = 1
		}
		attrs := maps.Clone(recs[j].Attributes)
		if attrs == nil {
			attrs = map[string]string{}
		}
		attrs["ApproximateReceiveCount"] = strconv.Itoa(first + i)
		recs[j].Attributes = attrs
	}
	ev.Records = recs
	return any(ev).(E)
}

// ReplayConcurrently is Replay with the n deliveries at once: n goroutines
// released together, as concurrent redeliveries (or environments) meet.
func ReplayConcurrently[E, R any](ctx context.Context, n int, handle func(context.Context, E) (R, error), event E) []Delivery[R] {
	out := make([]Delivery[R], n)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range out {
		wg.Go(func() {
			<-start
			out[i].Response, out[i].Err = handle(ctx, event)
		})
	}
	close(start)
	wg.Wait()
	return out
}

// Mode is how a sender repeats a delivery, for a table test that runs a
// handler both ways without naming Replay's type parameters:
//
//	for _, mode := range []idemtest.Mode{idemtest.OneAfterAnother, idemtest.AtOnce} {
//		ds := idemtest.Deliver(ctx, mode, 3, handle, idemtest.SQSEvent(msg))
//		…
//	}
type Mode int

const (
	// OneAfterAnother is Replay: a redelivery after each answer.
	OneAfterAnother Mode = iota
	// AtOnce is ReplayConcurrently: every delivery at the same time, in
	// one process.
	AtOnce
)

func (m Mode) String() string {
	switch m {
	case OneAfterAnother:
		return "one after another"
	case AtOnce:
		return "at once"
	}
	return "Mode(" + strconv.Itoa(int(m)) + ")"
}

// Deliver is Replay or ReplayConcurrently, as mode says; an unknown mode
// is Replay.
func Deliver[E, R any](ctx context.Context, mode Mode, n int, handle func(context.Context, E) (R, error), event E) []Delivery[R] {
	if mode == AtOnce {
		return ReplayConcurrently(ctx, n, handle, event)
	}
	return Replay(ctx, n, handle, event)
}

// ReplayAcross hands event to each of handles at once, one delivery each,
// and returns what each returned, in handles' order. Built each around a
// Store of its own (Env.Environments), the handles are separate Lambda
// execution environments: their deliveries meet only in DynamoDB, as a
// function's concurrent environments do, where ReplayConcurrently's, in
// one process, meet first in the Store, which coalesces them.
func ReplayAcross[E, R any](ctx context.Context, handles []func(context.Context, E) (R, error), event E) []Delivery[R] {
	out := make([]Delivery[R], len(handles))
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i, handle := range handles {
		wg.Go(func() {
			<-start
			out[i].Response, out[i].Err = handle(ctx, event)
		})
	}
	close(start)
	wg.Wait()
	return out
}

// Outcomes counts what a Store made of each delivery, by outcome: an
// idem.Observer to add with Option.
//
//	var seen idemtest.Outcomes
//	store, err := idem.New(env.Client, env.Processed, seen.Option)
//	…
//	if seen.Count(idem.Processed) != 1 { … }
type Outcomes struct {
	mu sync.Mutex
	n  map[idem.Outcome]int
}

// Option adds o to a Store's Observers.
func (o *Outcomes) Option(opts *idem.Options) { opts.Observers = append(opts.Observers, o) }

// Observe counts one delivery.
func (o *Outcomes) Observe(_ context.Context, ob idem.Observation) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.n == nil {
		o.n = map[idem.Outcome]int{}
	}
	o.n[ob.Outcome]++
}

// Count is how many deliveries came to outcome.
func (o *Outcomes) Count(outcome idem.Outcome) int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.n[outcome]
}

// All is every outcome counted, by name.
func (o *Outcomes) All() map[idem.Outcome]int {
	o.mu.Lock()
	defer o.mu.Unlock()
	all := make(map[idem.Outcome]int, len(o.n))
	for k, v := range o.n {
		all[k] = v
	}
	return all
}
