package idem

import (
	"context"
	"hash/maphash"
	"sync"
	"time"

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

// readFirst reads id's claim when deliveries like msg have lately been
// mostly duplicates, and returns it when it is final and unexpired: a
// Duplicate (or a key reuse) answered for one read. A read not made, a
// failed read, a claim still pending or expired: not found, and the
// transaction's condition decides.
func (s *Store) readFirst(ctx context.Context, msg Message, id Record) (Record, bool) {
	if s.reader == nil || !s.rates.high(s.classOf(msg, id.Key), s.opts.ReadFirstAbove) {
		return Record{}, false
	}
	cctx, span := s.call(ctx, "GetItem", nil)
	out, err := s.reader.GetItem(cctx, &dynamodb.GetItemInput{TableName: &s.table, Key: id.keyItem})
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

// settledKeys remembers, as hashes, the last keys whose claims this Store
// saw settled (committed, or found committed), each until its claim
// expires, so that a redelivery to the same environment reads its claim
// instead of paying a cancelled transaction. Only the way is chosen from
// it: DynamoDB's answer decides, so a hash that collides, or a claim
// deleted since, costs at most a read.
type settledKeys struct {
	mu   sync.Mutex
	seed maphash.Seed
	at   map[uint64]int // hash → its place in ring
	ring []settledKey
	next int
}

type settledKey struct {
	hash    uint64
	expires int64 // the claim's ExpiresAt, epoch seconds
}

// settledKeysKept is how many keys a Store remembers: about 130 KB, and
// several minutes of a busy sender's messages.
const settledKeysKept = 4096

func newSettledKeys() *settledKeys {
	return &settledKeys{seed: maphash.MakeSeed(), at: make(map[uint64]int, settledKeysKept), ring: make([]settledKey, 0, settledKeysKept)}
}

// has says whether key's claim was seen settled here and is unexpired at
// now.
func (k *settledKeys) has(key string, now time.Time) bool {
	h := maphash.String(k.seed, key)
	k.mu.Lock()
	defer k.mu.Unlock()
	i, ok := k.at[h]
	return ok && now.Unix() < k.ring[i].expires
}

// add remembers rec's key until rec expires.
func (k *settledKeys) add(rec Record) {
	e := settledKey{maphash.String(k.seed, rec.Key), rec.ExpiresAt.Unix()}
	k.mu.Lock()
	defer k.mu.Unlock()
	if i, ok := k.at[e.hash]; ok {
		k.ring[i] = e
		return
	}
	if len(k.ring) < settledKeysKept {
		k.at[e.hash] = len(k.ring)
		k.ring = append(k.ring, e)
		return
	}
	if old := k.ring[k.next].hash; k.at[old] == k.next {
		delete(k.at, old)
	}
	k.ring[k.next], k.at[e.hash] = e, k.next
	k.next = (k.next + 1) % settledKeysKept
}
