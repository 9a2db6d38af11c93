package idem

import (
	"context"
	"sync"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/idemkit/kit/idem/internal/seam"
)

// When a sender's deliveries are mostly duplicates (a redelivery storm, a
// relay resending a batch), a duplicate that reaches DynamoDB is found
// sooner by a read of its claim than by the transaction its claim cancels:
// on DynamoDB's published latencies a single-item read takes about a
// third of a transaction (FACTS: PutItem 7.55 ms at p50, a 2-action
// TransactWriteItems about 24). The read goes out beside the delivery's
// transaction, not before it: a first delivery then takes its
// transaction's time, and a duplicate the read's, its transaction (if
// sent yet) left to fail its claim's condition unwaited for. A redelivery the sender counts (Message.Attempt 2
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
	stored Record
	found  bool
}

// startRead sends the read of id's claim when the sender's recent
// duplicates make it worth its cost; nil when they do not, or the client
// has no GetItem. A failed read finds nothing: the transaction decides.
// The read runs to its end even once nobody waits for it (detached, by
// the invoke's deadline): a call cut short closes its connection, and the
// next call pays for a new one (a TLS handshake, on AWS).
func (s *Store) startRead(ctx context.Context, msg Message, id Record) *claimRead {
	if s.reader == nil || !s.rates.high(msg, s.opts.ReadFirstAbove) {
		return nil
	}
	own, _ := seam.Delivery(ctx).(*deliveryTrace) // a read's span counts no send
	ctx, cancel := detached(ctx, own)
	r := &claimRead{done: make(chan struct{})}
	go func() {
		defer cancel()
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

// detached is ctx without its cancellation but with its deadline, for a
// call that runs to its end after the delivery no longer waits for it;
// its trace value is t (nil: none), so that its sends are not counted
// toward a delivery that has settled.
func detached(ctx context.Context, t *deliveryTrace) (context.Context, context.CancelFunc) {
	ctx = seam.WithDelivery(context.WithoutCancel(ctx), t)
	if dl, ok := ctx.Deadline(); ok {
		return context.WithDeadline(ctx, dl)
	}
	return ctx, func() {}
}

// wait waits for the read's answer: the final claim it found, if any.
func (r *claimRead) wait(ctx context.Context) (Record, bool) {
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
	k := rateKeyOf(msg)
	share, ok := r.m[k]
	if !ok {
		share = k.prior()
	}
	return share > limit
}

// prior is a class's share before any of its deliveries settled: a
// redelivery the sender counts is taken for a duplicate until its
// sender's show otherwise (in a storm most are, and a cold environment's
// first ones then read instead of paying a cancelled transaction each);
// other deliveries for first ones.
func (k rateKey) prior() float64 {
	if k.class == 2 {
		return 1
	}
	return 0
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
	share, ok := r.m[k]
	if !ok {
		share = k.prior()
	}
	r.m[k] = share + rateWeight*(x-share)
}
