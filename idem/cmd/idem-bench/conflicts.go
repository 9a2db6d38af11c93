package main

// The conflict model: the latency proxy (proxy.go) answering as DynamoDB's
// documented rules say when writes meet on one item, for the hot-item
// section (hot.go); every other section runs without it.
//
//   - A TransactWriteItems holds every item it writes or condition-checks
//     from its arrival at the proxy until its answer is sent back
//     (developer guide, transaction-apis, "Transaction conflict handling").
//     A request that meets a held item is not forwarded: a
//     TransactWriteItems is answered 400 TransactionCanceledException whose
//     CancellationReasons, one per action in order, say TransactionConflict
//     on the held items and None on the others; a PutItem, UpdateItem or
//     DeleteItem is answered 400 TransactionConflictException. Each after
//     its own drawn latency, as the SDK would see it. A transaction refused
//     so holds nothing.
//   - A GetItem is served: the guide's list of conflicts names PutItem,
//     UpdateItem and DeleteItem beside transactions, and gives GetItem
//     read-committed isolation (it returns the last committed value; its
//     API lists no TransactionConflictException).
//   - Single writes hold nothing: DynamoDB serializes them on the item
//     without errors.
//   - Each partition key value is a partition of its own with
//     unitsPerSecond write units a second (1,000 on DynamoDB; the section
//     divides it by its latency scale) and at most burst of them unspent
//     (one second's, 1,000): a transactional write costs 2 units per action,
//     a single write 1 (items under 1 KB), spent when the request is
//     admitted. A write its partition cannot pay for is throttled, not
//     forwarded: a single write 400 ThrottlingException with the reason
//     TableWriteKeyRangeThroughputExceeded (the exception users of
//     on-demand tables report; provisioned tables answer
//     ProvisionedThroughputExceededException, with the same reasons), a
//     transaction TransactionCanceledException with ThrottlingError on the
//     items of that partition. Reads are not limited here.

import (
	"context"
	"encoding/json"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemkit/kit/idem/idemtest"
)

// DynamoDB's per-partition write limit and the units a write costs.
const (
	partitionUnits = 1000 // write units a second (developer guide, bp-partition-key-design)
	txActionUnits  = 2    // a transactional write of an item under 1 KB
	singleUnits    = 1    // a single write of an item under 1 KB
)

// conflicts is the conflict model of one proxy. Its zero value is not
// ready: newConflicts makes one.
type conflicts struct {
	unitsPerSecond float64 // a partition's write units a second
	burst          float64 // the most a partition keeps unspent
	now            func() time.Time
	// keySchema is a table's key attributes, the partition key first:
	// what a Put's item is identified by. newConflicts asks the local
	// server once per table (DescribeTable).
	keySchema func(ctx context.Context, table string) ([]string, error)

	mu      sync.Mutex
	schemas map[string][]string
	holds   map[string]time.Time // held item → since when
	buckets map[string]*bucket   // by partition
	tally   proxyTally
}

// bucket is a partition's unspent write units as of at.
type bucket struct {
	units float64
	at    time.Time
}

// newConflicts is the model over the local server at upstream: a
// partition has unitsPerSecond write units a second, burst at most at
// once.
func newConflicts(upstream string, unitsPerSecond, burst float64) *conflicts {
	client := idemtest.Client(upstream)
	return &conflicts{
		unitsPerSecond: unitsPerSecond, burst: burst, now: time.Now,
		keySchema: func(ctx context.Context, table string) ([]string, error) {
			out, err := client.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(table)})
			if err != nil {
				return nil, err
			}
			keys := make([]string, 0, 2)
			for _, k := range out.Table.KeySchema {
				if k.KeyType == types.KeyTypeHash {
					keys = append([]string{aws.ToString(k.AttributeName)}, keys...)
				} else {
					keys = append(keys, aws.ToString(k.AttributeName))
				}
			}
			return keys, nil
		},
		schemas: map[string][]string{}, holds: map[string]time.Time{}, buckets: map[string]*bucket{}, tally: newTally(),
	}
}

// withConflicts is startProxy's option that turns the model on.
func withConflicts(c *conflicts) func(*modelProxy) {
	return func(p *modelProxy) { p.conflicts = c }
}

// modelRequest is a modelled request as the conflict model reads it.
type modelRequest struct {
	op         string
	items      []itemRef // a transaction's actions in order, or the one item
	consistent bool      // a strongly consistent GetItem
}

// itemRef names an item (table and key) and its partition (table and
// partition key value); id is "" for an item the model cannot name.
type itemRef struct{ table, id, partition string }

// refusal is why the model answers a request itself.
type refusal struct {
	kind    answer   // answerConflict or answerThrottled
	reasons []string // a transaction's CancellationReasons codes, in order
	table   string   // a throttled single write's table, for its reason's resource
}

// admit reads a modelled request and says whether it goes on: refused is
// non-nil when the model answers it itself; otherwise release, called
// once the answer is sent, ends the holds it took. A body it cannot read
// goes on, for the local server to refuse.
func (cm *conflicts) admit(ctx context.Context, c *call, body []byte) (refused *refusal, release func()) {
	req, err := cm.read(ctx, c.op, body)
	if err != nil {
		return nil, func() {}
	}
	c.req = req
	cm.mu.Lock()
	defer cm.mu.Unlock()
	now := cm.now()
	tx := req.op == "TransactWriteItems"
	if req.op == "GetItem" {
		return nil, func() {}
	}
	if r := cm.heldBy(req, tx); r != nil {
		cm.tally.add(req, r.kind)
		return r, nil
	}
	if r := cm.spend(req, tx, now); r != nil {
		cm.tally.add(req, r.kind)
		return r, nil
	}
	if !tx {
		return nil, func() {}
	}
	var ids []string
	for _, it := range req.items {
		if it.id != "" {
			cm.holds[it.id] = now
			ids = append(ids, it.id)
		}
	}
	return nil, func() { cm.release(ids) }
}

// heldBy is the refusal of a request that meets a held item, or nil.
func (cm *conflicts) heldBy(req *modelRequest, tx bool) *refusal {
	reasons := make([]string, len(req.items))
	met := false
	for i, it := range req.items {
		reasons[i] = "None"
		if _, ok := cm.holds[it.id]; ok && it.id != "" {
			reasons[i], met = "TransactionConflict", true
		}
	}
	if !met {
		return nil
	}
	if !tx {
		reasons = nil
	}
	return &refusal{kind: answerConflict, reasons: reasons}
}

// spend takes a write's units from its items' partitions, or takes none
// and returns the refusal of a write some partition cannot pay for.
func (cm *conflicts) spend(req *modelRequest, tx bool, now time.Time) *refusal {
	cost := float64(singleUnits)
	if tx {
		cost = txActionUnits
	}
	need := map[string]float64{}
	for _, it := range req.items {
		if it.partition != "" { // an item the model cannot name is not limited
			need[it.partition] += cost
		}
	}
	short := map[string]bool{}
	for part, n := range need {
		if cm.bucketOf(part, now).units < n {
			short[part] = true
		}
	}
	if len(short) > 0 {
		r := &refusal{kind: answerThrottled, table: req.items[0].table}
		if tx {
			for _, it := range req.items {
				r.reasons = append(r.reasons, map[bool]string{true: "ThrottlingError", false: "None"}[short[it.partition]])
			}
		}
		return r
	}
	for part, n := range need {
		cm.buckets[part].units -= n
		cm.tally.units[part] += n
	}
	return nil
}

// bucketOf is part's bucket, refilled up to now.
func (cm *conflicts) bucketOf(part string, now time.Time) *bucket {
	b, ok := cm.buckets[part]
	if !ok {
		b = &bucket{units: cm.burst, at: now}
		cm.buckets[part] = b
	}
	if d := now.Sub(b.at); d > 0 {
		b.units = min(cm.burst, b.units+d.Seconds()*cm.unitsPerSecond)
		b.at = now
	}
	return b
}

// release ends a transaction's holds once its answer is sent.
func (cm *conflicts) release(ids []string) {
	cm.mu.Lock()
	defer cm.mu.Unlock()
	now := cm.now()
	for _, id := range ids {
		if since, ok := cm.holds[id]; ok {
			cm.tally.heldFor[id] += now.Sub(since)
			delete(cm.holds, id)
		}
	}
}

// held says whether a transaction holds the item of table whose key
// attributes are key (wire JSON, as {"pk": {"S": "a"}}), for the tests.
func (cm *conflicts) held(table string, key map[string]json.RawMessage) bool {
	cm.mu.Lock()
	defer cm.mu.Unlock()
	_, ok := cm.holds[itemID(table, key)]
	return ok
}

// answered tallies the local server's answer to a request the model
// forwarded.
func (cm *conflicts) answered(c *call, status int, body []byte) {
	if c.req == nil {
		return
	}
	kind := answerOK
	switch t := errorType(body); {
	case status == 200:
	case t == "TransactionCanceledException" || t == "ConditionalCheckFailedException":
		kind = answerCondition
	default:
		kind = answerError
	}
	cm.mu.Lock()
	defer cm.mu.Unlock()
	cm.tally.add(c.req, kind)
	cm.tally.forwarded[c.req.op]++
}
