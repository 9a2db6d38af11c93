package idem

import (
	"sync"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
)

// A duplicate that reaches DynamoDB costs one call either way: a read of
// its claim (GetItem, eventually consistent: 0.5 RRU, a documented price)
// or the transaction its claim's condition cancels (its units are not
// documented; FACTS). A delivery takes one way, never both at once: it
// reads first when deliveries like it have lately been mostly duplicates
// (Options.ReadFirstAbove), and goes straight to its transaction
// otherwise. So a duplicate costs exactly one call, and a first delivery
// at most two (the read that found nothing, then its transaction).
//
// "Like it" is a class of the sender's deliveries: a key this environment
// saw settled before (nearly always a duplicate: the redelivery of a
// message this environment processed), a redelivery the sender counts
// (Message.Attempt 2 or more), a first attempt it counts, and a delivery
// nobody counts. Each class keeps its own share of duplicates.

// readFirst reads d's claim when deliveries like it have lately been
// mostly duplicates, and returns it when it is final and unexpired: a
// Duplicate (or a key reuse) answered for one read. A read not made, a
// failed read, a claim still pending or expired: not found, and the
// transaction's condition decides.
func (s *Store) readFirst(d *delivery) (Record, bool) {
	if s.reader == nil || !s.rates.high(d.class, s.opts.ReadFirstAbove) {
		return Record{}, false
	}
	cctx, span := s.call(d.ctx, "GetItem", nil)
	out, err := s.reader.GetItem(cctx, &dynamodb.GetItemInput{TableName: &s.table, Key: d.key.item})
	endCall(span, err)
	if err != nil || len(out.Item) == 0 || isOutboxItem(out.Item) {
		return Record{}, false
	}
	stored := s.decodeRecord(out.Item)
	// A lease, or an expired claim: the claim's condition decides.
	return stored, stored.Outcome != Pending && s.opts.Now().Before(stored.ExpiresAt)
}

// classOf is the class of deliveries msg belongs to, for its sender's
// share of duplicates.
func (s *Store) classOf(msg Message, key string) rateKey {
	class := int8(min(max(msg.Attempt, 0), 2)) // a third receive says no more than a second
	if s.settled.has(key, s.opts.Now()) {
		class = classSettledHere
	}
	return rateKey{msg.Source, class}
}

// rates are each sender's recent share of duplicates among the deliveries
// this Store settled, a moving average, in this environment, one per
// class of delivery (classOf).
type rates struct {
	mu sync.Mutex
	m  map[rateKey]float64
}

// rateKey names one average: a sender's deliveries of one class.
type rateKey struct {
	source string
	class  int8 // 0: not counted; 1: a first attempt; 2: a later one; classSettledHere
}

// classSettledHere: deliveries of a key whose claim this environment saw
// settled before.
const classSettledHere int8 = 3

// rateWeight is how much one delivery moves its class's average: about
// the last 16 deliveries of that class count, however long ago.
const rateWeight = 1.0 / 16

// maxRateKeys bounds the averages a Store keeps (up to 4 a sender); past
// it the map starts afresh (senders are few: queues, routes, providers).
const maxRateKeys = 1024

// high says whether the recent share of duplicates of class k is above
// limit; a negative limit never is.
func (r *rates) high(k rateKey, limit float64) bool {
	if limit < 0 {
		return false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	share, ok := r.m[k]
	if !ok {
		share = k.prior()
	}
	return share > limit
}

// prior is a class's share before any of its deliveries settled: a key
// settled here before, and a redelivery the sender counts, are taken for
// duplicates until their class shows otherwise (a cold environment's
// first redeliveries in a storm then read instead of paying a cancelled
// transaction each); other deliveries for first ones.
func (k rateKey) prior() float64 {
	if k.class >= 2 {
		return 1
	}
	return 0
}

// count adds a delivery of class k, settled in res, err, to its class's
// average, unless no call settled it (the cache's answer, or another
// delivery's in this process): the average is of the deliveries a read
// could have spared a transaction.
func (r *rates) count(k rateKey, res Result, err error) {
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
	share, ok := r.m[k]
	if !ok {
		share = k.prior()
	}
	r.m[k] = share + rateWeight*(x-share)
}
