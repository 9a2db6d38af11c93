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
// going up by one each time), and returns what each delivery returned, in
// order. handle is any of the kit's handlers: an SQS batch handler
// (sqsconsumer.New), a webhook's (Receiver.HandleV2, Mux.HandleV1), a
// wrapped one (idem.Wrap), a stream's, or a closure over Store.Process.
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
// a redelivery as one (idem.Message.Attempt). Other events are as given.
func redelivery[E any](event E, i int) E {
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
