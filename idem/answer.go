package idem

import (
	"container/list"
	"context"
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
)

// How a delivery is answered: from a claim this process knows (the
// cache's, or the outcome of another delivery of its key in flight here),
// from a read of its claim when its sender's recent duplicates make the
// read worth its cost, or by running it (run.go); and what a settled
// delivery leaves behind for the next ones.

// answer answers a delivery of id. A delivery it runs leads its key's
// flight in this process; what it settles is learnt on the way out, a
// panic's nothing included.
func (s *Store) answer(ctx context.Context, msg Message, id Record, h Handler) (res Result, err error) {
	if res, err, ok := s.cached(msg, id); ok {
		return res, err
	}
	fl, res, err, done := s.aboard(ctx, msg, id)
	if done {
		return res, err
	}
	defer s.learn(msg, id, fl, &res, &err)
	if res, err, ok := s.peeked(ctx, msg, id); ok {
		return res, err
	}
	return s.run(ctx, msg, id, h)
}

// cached answers a delivery whose claim the cache holds, as the claim's
// condition would (ok), replaying the stored record to a Duplicate.
func (s *Store) cached(msg Message, id Record) (Result, error, bool) {
	stored, ok := s.cache.get(id.Key, s.opts.Now())
	if !ok {
		return Result{}, nil, false
	}
	res, err := s.answerFrom(msg, id, stored)
	return res, err, true
}

// answerFrom answers a delivery from a claim it knows without a call (the
// cache's, or the one a coalesced delivery's leader left): a Duplicate,
// its stored record replayed, or a key reuse.
func (s *Store) answerFrom(msg Message, id, stored Record) (Result, error) {
	// The delivery's own bytes: the cache's and a flight's record are
	// shared by every delivery of the key, and its caller may change its
	// Result.
	stored.Response = slices.Clone(stored.Response)
	res, err := s.meet(id, stored)
	if err == nil {
		res.Cached = true
		err = replay(msg, id.Key, res.Record)
	}
	if err != nil {
		return Result{}, err
	}
	return res, nil
}

// cache holds the claim records a Store has seen committed, most recently
// used first, at most size of them, so that a duplicate in a warm
// environment is answered without a call. A record is used only while its
// claim holds (before ExpiresAt): after that a delivery is a first one
// again, which only DynamoDB can decide.
type cache struct {
	mu    sync.Mutex
	size  int
	order *list.List               // of *Record, front most recent
	byKey map[string]*list.Element // claim key → its element
}

func newCache(size int) *cache {
	if size <= 0 {
		return nil
	}
	return &cache{size: size, order: list.New(), byKey: make(map[string]*list.Element, size)}
}

// get returns key's committed record, if it is cached and unexpired at
// now; its Response is the cache's, which nobody may change.
func (c *cache) get(key string, now time.Time) (Record, bool) {
	if c == nil {
		return Record{}, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.byKey[key]
	if !ok {
		return Record{}, false
	}
	rec := el.Value.(*Record)
	if !now.Before(rec.ExpiresAt) {
		c.order.Remove(el)
		delete(c.byKey, key)
		return Record{}, false
	}
	c.order.MoveToFront(el)
	return *rec, true // its Response is shared: answerFrom copies it
}

// put remembers a record DynamoDB holds: one just committed, or the one a
// cancelled claim returned.
func (c *cache) put(rec Record) {
	if c == nil || rec.Key == "" || rec.ExpiresAt.IsZero() {
		return
	}
	rec.Response = slices.Clone(rec.Response) // not the caller's buffer
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.byKey[rec.Key]; ok {
		*el.Value.(*Record) = rec
		c.order.MoveToFront(el)
		return
	}
	c.byKey[rec.Key] = c.order.PushFront(&rec)
	if c.order.Len() > c.size {
		last := c.order.Back()
		c.order.Remove(last)
		delete(c.byKey, last.Value.(*Record).Key)
	}
}

// Deliveries of one key in flight in this process at once (Lambda
// Managed Instances run several invokes in one process; a batch may hold a
// message twice): the first runs, the others wait for its outcome and
// answer from it, with no handler run and no call.

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

// land ends the leader's flight with what it learnt: the claim DynamoDB
// holds after its delivery (res, or a key reuse's stored claim), if the
// delivery settled it. A delivery that failed leaves nothing known, and
// its followers run on their own.
func (fl *flight) land(res Result, err error) {
	if rec, ok := settled(res, err); ok {
		// A copy: the leader's caller may change its Result once it has
		// it, while a follower reads this.
		rec.Response = slices.Clone(rec.Response)
		fl.rec, fl.known = rec, true
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

// learn takes in what a delivery that led its key's flight settled (*res,
// *err): the claim it committed or met goes into the cache, a Duplicate's
// stored record is replayed to msg, the outcome counts toward its
// sender's share of duplicates, and lands fl for the deliveries of its key
// waiting in this process. After a panic past every recovery *res and
// *err are still the zero values answer began with, which settle nothing:
// nothing is cached or counted, and the waiting ones run on their own.
func (s *Store) learn(msg Message, id Record, fl *flight, res *Result, err *error) {
	s.remember(*res, *err)
	if *err == nil && res.Outcome == Duplicate {
		if *err = replay(msg, id.Key, res.Record); *err != nil {
			*res = Result{}
		}
	}
	s.rates.count(msg, *res, *err)
	fl.land(*res, *err)
}

// remember caches the record a commit left in DynamoDB, or found there.
func (s *Store) remember(res Result, err error) {
	if s.cache == nil {
		return
	}
	if rec, ok := settled(res, err); ok {
		s.cache.put(rec)
	}
}

// settled is the claim DynamoDB holds for a key after a delivery of it
// ended in res, err, when that tells: the one it committed or found, or
// the claim of another payload a key reuse met. A pending claim may yet be
// released, and a failure tells nothing.
func settled(res Result, err error) (Record, bool) {
	var kr *KeyReuseError
	switch {
	case err == nil && res.Record.Key != "":
		return res.Record, true
	case errors.As(err, &kr) && kr.Stored.Outcome != Pending:
		return kr.Stored, true
	}
	return Record{}, false
}

// When a sender's deliveries are mostly duplicates (a redelivery storm, a
// relay resending a batch), a duplicate that reaches DynamoDB is cheaper
// found by a read of its claim than by a transaction its claim cancels:
// on DynamoDB's published latencies a single-item read costs about a
// third of a transaction (FACTS: PutItem 7.55 ms at p50, a 2-action
// TransactWriteItems about 24). The claim's condition still decides: a read
// that finds nothing, or a claim not final, costs only its time.

// peeked answers a delivery whose claim a read found final and
// unexpired, as the cache does, when the sender's recent duplicates make
// the read worth its cost (ok); otherwise it says to go on.
func (s *Store) peeked(ctx context.Context, msg Message, id Record) (Result, error, bool) {
	reader, ok := s.client.(GetItemAPI)
	if !ok || !s.rates.high(msg, s.opts.ReadFirstAbove) {
		return Result{}, nil, false
	}
	cctx, span := s.call(ctx, "GetItem", nil)
	out, err := reader.GetItem(cctx, &dynamodb.GetItemInput{TableName: &s.table, Key: id.keyItem})
	endCall(span, err)
	if err != nil || len(out.Item) == 0 || isOutboxItem(out.Item) {
		return Result{}, nil, false // the transaction decides, and says why
	}
	stored := s.decodeRecord(out.Item)
	if stored.Outcome == Pending || !s.opts.Now().Before(stored.ExpiresAt) {
		return Result{}, nil, false // a lease, or an expired claim: the claim's condition decides
	}
	res, err := s.meet(id, stored)
	return res, err, true
}

// rates are each sender's recent share of duplicates among the deliveries
// this Store settled, a moving average, in this environment; kept apart
// for its first attempts, its later ones, and deliveries it does not
// count (Message.Attempt).
type rates struct {
	mu sync.Mutex
	m  map[rateKey]float64
}

// rateKey names one average: a sender's deliveries of one class.
type rateKey struct {
	source string
	class  int8 // 0: not counted; 1: a first attempt; 2: a later one
}

// rateKeyOf is msg's average. A third receive says no more than a second
// (a redelivery), so every later attempt shares one class.
func rateKeyOf(msg Message) rateKey {
	return rateKey{msg.Source, int8(min(max(msg.Attempt, 0), 2))}
}

// rateWeight is how much one delivery moves its class's average: about
// the last 16 deliveries of that class count, however long ago (after a
// storm a warm environment's redeliveries read first until about 16 more
// of them have come).
const rateWeight = 1.0 / 16

// maxRateKeys bounds the averages a Store keeps (up to 3 a sender); past
// it the map starts afresh (senders are few: queues, routes, providers).
const maxRateKeys = 1024

// high says whether the recent share of duplicates among deliveries like
// msg (its sender's, its attempt's) is above limit; a negative limit never
// is.
func (r *rates) high(msg Message, limit float64) bool {
	if limit < 0 {
		return false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.m[rateKeyOf(msg)] > limit
}

// count adds a settled delivery to its class's average, unless no call
// settled it (the cache's answer, or another delivery's in this process):
// the average is of the deliveries a read could have spared a transaction.
func (r *rates) count(msg Message, res Result, err error) {
	o := res.Outcome
	if err != nil || res.Cached || o != Processed && o != Duplicate && o != Rejected {
		return
	}
	x := 0.0
	if o == Duplicate {
		x = 1
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.m == nil || len(r.m) >= maxRateKeys {
		r.m = map[rateKey]float64{}
	}
	k := rateKeyOf(msg)
	r.m[k] += rateWeight * (x - r.m[k])
}

// meet is what stored, a claim DynamoDB holds (or the cache remembers),
// means for a delivery whose claim would be rec.
func (s *Store) meet(rec, stored Record) (Result, error) {
	switch {
	case !sameMessage(stored, rec):
		return Result{}, &KeyReuseError{Key: rec.Key, Fingerprint: rec.Fingerprint, Stored: stored}
	case stored.Outcome == Pending:
		return Result{}, held(rec.Key, stored)
	}
	return Result{Outcome: Duplicate, Record: stored, PayloadChanged: stored.PayloadDigest != rec.PayloadDigest}, nil
}

// sameMessage says whether a delivery whose record is rec is a redelivery
// of the message stored holds, rather than a reuse of its key: the same
// fingerprint, or the same bytes (as when a sender's fingerprint changed
// from the payload's digest to a provider's identity, with claims of the
// old kind still stored).
func sameMessage(stored, rec Record) bool {
	return stored.Fingerprint == rec.Fingerprint || stored.PayloadDigest == rec.PayloadDigest
}

// replay runs msg.Replay on a Duplicate's stored record.
func replay(msg Message, key string, stored Record) error {
	if msg.Replay == nil {
		return nil
	}
	var rerr error
	if err := recoverPanic(key, "Message.Replay", func() error { rerr = msg.Replay(stored); return nil }); err != nil {
		return err
	}
	if rerr != nil {
		return &ReplayError{Key: key, Err: rerr}
	}
	return nil
}
