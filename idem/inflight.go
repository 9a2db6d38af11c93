package idem

import (
	"context"
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/idemkit/kit/idem/internal/seam"
)

// Deliveries of one key in flight in this process at once (Lambda
// Managed Instances run several invokes in one process; a batch may hold a
// message twice): the first leads and runs, the others wait for its
// outcome and answer from it, with no handler run and no call.

// keyCalls are the keys being processed in this process, each by one
// delivery that leads it.
type keyCalls struct {
	mu    sync.Mutex
	calls map[string]*keyCall
}

// keyCall is one key's delivery in progress, and its leader's duty to
// complete it: with its outcome, or, if the delivery never reached one (a
// panic past every recovery), with nothing known, so that no delivery
// waits for ever. Once complete, rec is the claim DynamoDB holds for the
// key, when known.
type keyCall struct {
	in        *keyCalls
	key       string
	done      chan struct{} // made once a delivery waits (under in.mu): most calls have none
	completed bool          // under in.mu
	rec       Record
	known     bool
}

// join returns key's call and whether the caller leads it: a leader must
// complete it.
func (in *keyCalls) join(key string) (*keyCall, bool) {
	in.mu.Lock()
	defer in.mu.Unlock()
	if c, ok := in.calls[key]; ok {
		return c, false
	}
	if in.calls == nil {
		in.calls = map[string]*keyCall{}
	}
	c := &keyCall{in: in, key: key}
	in.calls[key] = c
	return c, true
}

// wait waits for c to complete: it returns the claim its leader settled,
// and false when the leader settled none (the caller then runs on its
// own), or ctx's end.
func (c *keyCall) wait(ctx context.Context) (Record, bool, error) {
	c.in.mu.Lock()
	if c.completed {
		c.in.mu.Unlock()
		return c.rec, c.known, nil
	}
	if c.done == nil {
		c.done = make(chan struct{})
	}
	done := c.done
	c.in.mu.Unlock()
	select {
	case <-done:
		return c.rec, c.known, nil
	case <-ctx.Done():
		return Record{}, false, ctx.Err()
	}
}

// complete completes the leader's call with its outcome: the claim
// DynamoDB holds after its delivery (res, or a key reuse's stored claim),
// if the delivery settled it. A delivery that failed leaves nothing known,
// and the deliveries waiting for it run on their own.
func (c *keyCall) complete(res Result, err error) {
	if rec, ok := claimOf(res, err); ok {
		// A copy: the leader's caller may change its Result once it has
		// it, while a waiting delivery reads this.
		rec.Response = slices.Clone(rec.Response)
		c.rec, c.known = rec, true
	}
	c.in.mu.Lock()
	defer c.in.mu.Unlock()
	if c.in.calls[c.key] == c {
		delete(c.in.calls, c.key)
	}
	c.completed = true
	if c.done != nil {
		close(c.done)
	}
}

// completeIfLeft completes a call its leader left without an outcome.
func (c *keyCall) completeIfLeft() {
	if !c.completed { // only its leader writes it
		c.complete(Result{}, errNoOutcome)
	}
}

var errNoOutcome = errors.New("idem: the delivery ended before its outcome")

// inFlightRetry is when a delivery that gave up waiting for another of its
// key in this process is told to come back: most deliveries settle within
// it, and the retry is then a Duplicate from the cache or a claim.
const inFlightRetry = time.Second

// boundedWait is how long a delivery may wait for another of its key in
// this process, when its adapter bounded it (seam.WithWait).
func boundedWait(ctx context.Context) (time.Duration, bool) { return seam.Wait(ctx) }
