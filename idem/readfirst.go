package idem

import (
	"context"
	"sync"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
)

// When a sender's deliveries are mostly duplicates (a redelivery storm, a
// relay resending a batch), a duplicate that reaches DynamoDB is cheaper
// found by a read of its claim than by a transaction its claim cancels:
// on DynamoDB's published latencies a single-item read costs about a
// third of a transaction (FACTS: PutItem 7.55 ms at p50, a 2-action
// TransactWriteItems about 24). The claim's condition still decides: a read
// that finds nothing, or a claim not final, costs only its time.

// readFirst reads id's claim when the sender's recent duplicates make the
// read worth its cost, and returns it when it is final and unexpired: the
// delivery is then answered from it, as from the cache's (storedAnswer).
// Otherwise (no read, nothing found, a lease, an expired claim, a failed
// read) the claim's condition decides.
func (s *Store) readFirst(ctx context.Context, msg Message, id Record) (Record, bool) {
	if s.reader == nil || !s.rates.high(msg, s.opts.ReadFirstAbove) {
		return Record{}, false
	}
	cctx, span := s.call(ctx, "GetItem", nil)
	out, err := s.reader.GetItem(cctx, &dynamodb.GetItemInput{TableName: &s.table, Key: id.keyItem})
	endCall(span, err)
	if err != nil || len(out.Item) == 0 || isOutboxItem(out.Item) {
		return Record{}, false // the transaction decides, and says why
	}
	stored := s.decodeRecord(out.Item)
	if stored.Outcome == Pending || !s.opts.Now().Before(stored.ExpiresAt) {
		return Record{}, false // a lease, or an expired claim: the claim's condition decides
	}
	return stored, true
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
