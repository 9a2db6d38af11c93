package idem

import (
	"context"
	"errors"
	"sync"
)

// Deliveries of one key in flight in this process at once (Lambda
// Managed Instances run several invokes in one process; a batch may hold a
// message twice): the first runs, the others wait for its outcome and
// answer from it, with no handler run and no call.

// flights are the keys being processed in this process.
type flights struct {
	mu sync.Mutex
	m  map[string]*flight
}

// flight is one key's delivery in progress, and its leader's duty to land
// it: with its outcome, or, if the delivery never reached one (a panic
// past every recovery), with nothing known, so that no follower waits for
// ever. Once landed, rec is the claim DynamoDB holds for the key, when
// known.
type flight struct {
	f      *flights
	key    string
	done   chan struct{} // made once a follower waits (under f.mu): most flights have none
	landed bool          // under f.mu
	rec    Record
	known  bool
}

// join returns key's flight and whether the caller leads it: a leader
// must land it.
func (f *flights) join(key string) (*flight, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if fl, ok := f.m[key]; ok {
		return fl, false
	}
	if f.m == nil {
		f.m = map[string]*flight{}
	}
	fl := &flight{f: f, key: key}
	f.m[key] = fl
	return fl, true
}

// land ends the leader's flight with what it learnt: the claim DynamoDB
// holds after its delivery (res, or a key reuse's stored claim), if the
// delivery settled it. A delivery that failed leaves nothing known, and
// its followers run on their own.
func (fl *flight) land(res Result, err error) {
	var kr *KeyReuseError
	switch {
	case err == nil && res.Record.Key != "":
		fl.rec, fl.known = res.Record, true
	case errors.As(err, &kr) && kr.Stored.Outcome != Pending:
		fl.rec, fl.known = kr.Stored, true
	}
	fl.f.mu.Lock()
	defer fl.f.mu.Unlock()
	if fl.f.m[fl.key] == fl {
		delete(fl.f.m, fl.key)
	}
	fl.landed = true
	if fl.done != nil {
		close(fl.done)
	}
}

// unlessLanded lands a flight its leader left without an outcome.
func (fl *flight) unlessLanded() {
	if !fl.landed { // only its leader writes it
		fl.land(Result{}, errNotLanded)
	}
}

var errNotLanded = errors.New("idem: the delivery ended before its outcome")

// wait waits for fl to land: it returns the claim its leader left, and
// false when the leader learnt none (the caller then runs on its own), or
// ctx's end.
func (fl *flight) wait(ctx context.Context) (Record, bool, error) {
	fl.f.mu.Lock()
	if fl.landed {
		fl.f.mu.Unlock()
		return fl.rec, fl.known, nil
	}
	if fl.done == nil {
		fl.done = make(chan struct{})
	}
	done := fl.done
	fl.f.mu.Unlock()
	select {
	case <-done:
		return fl.rec, fl.known, nil
	case <-ctx.Done():
		return Record{}, false, ctx.Err()
	}
}

// aboard makes a delivery of id join id's flight: lead it (and land it
// with the outcome), or wait for its leader and answer from its outcome
// (done: res, err), as the cache answers: a Duplicate, or a key reuse,
// with no call. A leader that settled nothing lets the follower run: it
// then leads a flight of its own.
func (s *Store) aboard(ctx context.Context, msg Message, id Record) (lead *flight, res Result, err error, done bool) {
	for {
		fl, leads := s.flights.join(id.Key)
		if leads {
			return fl, Result{}, nil, false
		}
		if res, err, ok := s.follow(ctx, msg, id, fl); ok {
			return nil, res, err, true
		}
	}
}

// follow waits for fl, led by another delivery of id's key, and answers
// from its outcome (ok), or says its leader settled nothing.
func (s *Store) follow(ctx context.Context, msg Message, id Record, fl *flight) (Result, error, bool) {
	stored, known, err := fl.wait(ctx)
	if err != nil {
		return Result{}, &RetryableError{Key: id.Key, Err: err}, true
	}
	if !known {
		return Result{}, nil, false
	}
	res, err := s.answerFrom(msg, id, stored)
	return res, err, true
}
