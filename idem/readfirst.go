package idem

import (
	"context"
	"sync"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
)

// When a sender's deliveries are mostly duplicates (a redelivery storm, a
// relay resending a batch), a duplicate that reaches DynamoDB is found
// sooner by a read of its claim than by the transaction its claim cancels:
// on DynamoDB's published latencies a single-item read takes about a
// third of a transaction (FACTS: PutItem 7.55 ms at p50, a 2-action
// TransactWriteItems about 24). The read goes out beside the delivery's
// transaction, not before it: a first delivery then takes its
// transaction's time, and a duplicate the read's, its transaction (if
// sent yet) called off. A redelivery the sender counts (Message.Attempt 2
// or more) waits for its read instead: in a storm of them nearly all are
// duplicates, each answered by the read alone, and a first delivery among
// them pays the read's time before its transaction. The claim's condition
// still decides: a read that finds nothing, or a claim not final, only
// costs its request.

// claimRead is a read of a delivery's claim, sent beside its handler and
// transaction; done closes once it has an answer, which found says was a
// final, unexpired claim (stored).
type claimRead struct {
	done   chan struct{}
	stop   context.CancelFunc // once the delivery no longer needs the answer
	stored Record
	found  bool
}

// startRead sends the read of id's claim when the sender's recent
// duplicates make it worth its cost; nil when they do not, or the client
// has no GetItem. A failed read finds nothing: the transaction decides.
func (s *Store) startRead(ctx context.Context, msg Message, id Record) *claimRead {
	if s.reader == nil || !s.rates.high(msg, s.opts.ReadFirstAbove) {
		return nil
	}
	ctx, stop := context.WithCancel(ctx)
	r := &claimRead{done: make(chan struct{}), stop: stop}
	go func() {
		defer close(r.done)
		defer func() { _ = recover() }() // a client's panic: nothing found, and the transaction, on the caller's goroutine, meets it
		cctx, span := s.call(ctx, "GetItem", nil)
		out, err := s.reader.GetItem(cctx, &dynamodb.GetItemInput{TableName: &s.table, Key: id.keyItem})
		endCall(span, err)
		if err != nil || len(out.Item) == 0 || isOutboxItem(out.Item) {
			return
		}
		stored := s.decodeRecord(out.Item)
		// A lease, or an expired claim: the claim's condition decides.
		r.stored, r.found = stored, stored.Outcome != Pending && s.opts.Now().Before(stored.ExpiresAt)
	}()
	return r
}

// wait waits for the read's answer: the final claim it found, if any.
func (r *claimRead) wait(ctx context.Context) (Record, bool) {
	defer r.stop()
	select {
	case <-r.done:
		return r.stored, r.found
	case <-ctx.Done():
		return Record{}, false
	}
}

// foundNow is the claim the read found, if it has answered already.
func (r *claimRead) foundNow() (Record, bool) {
	select {
	case <-r.done:
		return r.stored, r.found
	default:
		return Record{}, false
	}
}

// commitBesideRead commits rec and eff as commitEffect does, and answers
// from the read of the claim instead when the read first finds a final
// claim made before this delivery's: a duplicate then takes the read's
// time, its transaction called off (its claim's condition would fail:
// nothing commits). A transaction that committed all the same, the claim
// having been deleted by hand meanwhile, is the answer.
func (s *Store) commitBesideRead(ctx context.Context, id, rec Record, eff Effect, read *claimRead) (Result, error) {
	if stored, ok := read.foundNow(); ok { // it came back while the handler ran: no transaction at all
		return s.storedAnswer(id, stored)
	}
	type outcome struct {
		res   Result
		err   error
		panic any
	}
	txCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan outcome, 1)
	go func() {
		var o outcome
		defer func() {
			if v := recover(); v != nil {
				o.panic = v
			}
			done <- o
		}()
		o.res, o.err = s.commitEffect(txCtx, rec, eff)
	}()
	settle := func(o outcome) (Result, error) {
		if o.panic != nil {
			panic(o.panic) // a client's, as on the caller's goroutine without a read
		}
		return o.res, o.err
	}
	select {
	case o := <-done:
		return settle(o)
	case <-read.done:
	}
	// A claim made at or after this delivery's own claim time may be its
	// own: the read can reach DynamoDB after the transaction committed and
	// before its answer is back. Then the transaction's answer decides.
	if !read.found || !read.stored.ClaimedAt.Before(rec.ClaimedAt) {
		return settle(<-done)
	}
	cancel()
	if o := <-done; o.panic != nil || o.err == nil && o.res.Outcome == Processed {
		return settle(o)
	}
	return s.storedAnswer(id, read.stored)
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
