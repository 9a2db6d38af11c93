package chaos_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemkit/kit/idem"
	"github.com/idemkit/kit/idem/idemtest"
)

// sharedDir holds what the tests build once and share; removed after them.
var sharedDir string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "chaos-")
	if err != nil {
		panic(err)
	}
	sharedDir = dir
	idemtest.Main(runThen{m, func() { os.RemoveAll(dir) }})
}

// runThen runs the tests, then cleans up after them.
type runThen struct {
	m       *testing.M
	cleanup func()
}

func (r runThen) Run() int {
	defer r.cleanup()
	return r.m.Run()
}

// tables are one test's tables on the real local endpoint: the claims, the
// accounts credited, and a ledger that counts each message's effects.
type tables struct {
	client    *dynamodb.Client // the test's own, never faulted
	processed string
	accounts  string
	ledger    string
}

func newTables(t *testing.T) *tables {
	t.Helper()
	c := idemtest.Client(idemtest.Endpoint(t))
	return &tables{
		client:    c,
		processed: idemtest.ProcessedTable(t, c),
		accounts:  idemtest.CreateTable(t, c, idemtest.Table{Name: "accounts", HashKey: "account"}),
		ledger:    idemtest.CreateTable(t, c, idemtest.Table{Name: "ledger", HashKey: "id"}),
	}
}

// effect is a message's writes: one more application on its own ledger
// item, and its credit on a shared account. The ledger tells a double or a
// lost effect apart for each message; the balances check the sums.
func (tb *tables) effect(id, account string, cents int) []types.TransactWriteItem {
	return []types.TransactWriteItem{
		{Update: &types.Update{
			TableName:                 aws.String(tb.ledger),
			Key:                       map[string]types.AttributeValue{"id": &types.AttributeValueMemberS{Value: id}},
			UpdateExpression:          aws.String("ADD applied :one"),
			ExpressionAttributeValues: map[string]types.AttributeValue{":one": &types.AttributeValueMemberN{Value: "1"}},
		}},
		{Update: &types.Update{
			TableName:                 aws.String(tb.accounts),
			Key:                       map[string]types.AttributeValue{"account": &types.AttributeValueMemberS{Value: account}},
			UpdateExpression:          aws.String("ADD balance :c"),
			ExpressionAttributeValues: map[string]types.AttributeValue{":c": &types.AttributeValueMemberN{Value: strconv.Itoa(cents)}},
		}},
	}
}

// faultShare is the share of requests f is set to fault, all kinds.
// dynamoFaults injects every kind of DynamoDB fault the kit meets, each
// at faultRate: throttling, server errors, resets, lost and truncated
// answers, and contention (a transaction cancelled by a conflict on one of
// its items, a single-item call answered TransactionConflictException or
// ReplicatedWriteConflictException).
func dynamoFaults() *idemtest.Faults {
	rates := map[idemtest.FaultKind]float64{}
	for _, k := range idemtest.FaultKinds {
		rates[k] = faultRate
	}
	return &idemtest.Faults{Seed: *seed, Rates: rates}
}

// contention says how many of the faults were contention, for a phase's
// last line.
func contention(counts map[idemtest.FaultKind]int) string {
	return fmt.Sprintf("%d TransactionConflict, %d ReplicatedWriteConflict",
		counts[idemtest.FaultTransactionConflict], counts[idemtest.FaultReplicatedConflict])
}

// everyKind fails the test unless the injectors fs between them injected
// each of kinds at least once: a soak too small to meet one proves nothing
// about it.
func everyKind(t *testing.T, what string, kinds []idemtest.FaultKind, fs ...*idemtest.Faults) {
	t.Helper()
	counts, requests := faultCounts(fs...), fs[0].Requests()
	for _, k := range kinds {
		if counts[k] == 0 {
			t.Errorf("%s: no %s fault was injected in %d requests", what, k, requests)
		}
	}
}

// faultCounts adds up the injectors' counts.
func faultCounts(fs ...*idemtest.Faults) map[idemtest.FaultKind]int {
	out := map[idemtest.FaultKind]int{}
	for _, f := range fs {
		for k, n := range f.Counts() {
			out[k] += n
		}
	}
	return out
}

// onceEach puts beneath f one injector for each of kinds, in their order,
// that faults the first request reaching it with its kind and passes on
// every later one: each kind is met at least once however f's draws fall,
// where a client makes too few requests for its rates to be sure of it.
// Kinds that send the request (a lost or truncated answer) go last, so that
// what they send reaches the server. It returns the injectors, for their
// counts.
func onceEach(f *idemtest.Faults, kinds ...idemtest.FaultKind) []*idemtest.Faults {
	var once []*idemtest.Faults
	next := &f.Next
	for _, k := range kinds {
		o := &idemtest.Faults{Rates: map[idemtest.FaultKind]float64{k: 1}, Max: 1, Operations: f.Operations, Next: *next}
		*next, next = o, &o.Next
		once = append(once, o)
	}
	return once
}

func faultShare(f *idemtest.Faults) float64 {
	sum := 0.0
	for _, r := range f.Rates {
		sum += r
	}
	return sum
}

// scan reads a whole table into key → number attribute.
func (tb *tables) scan(t *testing.T, table, key, number string) map[string]int {
	t.Helper()
	out := map[string]int{}
	p := dynamodb.NewScanPaginator(tb.client, &dynamodb.ScanInput{TableName: aws.String(table), ConsistentRead: aws.Bool(true)})
	for p.HasMorePages() {
		page, err := p.NextPage(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		for _, item := range page.Items {
			k, _ := item[key].(*types.AttributeValueMemberS)
			n, _ := item[number].(*types.AttributeValueMemberN)
			if k == nil {
				t.Fatalf("%s: an item without its key %s: %v", table, key, item)
			}
			v := 0
			if n != nil {
				v, _ = strconv.Atoi(n.Value)
			}
			out[k.Value] = v
		}
	}
	return out
}

// outcomes counts the Store's metric lines (one per delivery, written one at
// a time) by source and outcome.
type outcomes struct {
	mu sync.Mutex
	n  map[string]map[idem.Outcome]int
}

var allOutcomes = []idem.Outcome{idem.Processed, idem.Duplicate, idem.Rejected, idem.KeyReuse, idem.Failed, idem.Refused, idem.InFlight}

func (o *outcomes) Write(p []byte) (int, error) {
	var line map[string]any
	if err := json.Unmarshal(p, &line); err != nil {
		return 0, err
	}
	src, _ := line["Source"].(string)
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.n == nil {
		o.n = map[string]map[idem.Outcome]int{}
	}
	if o.n[src] == nil {
		o.n[src] = map[idem.Outcome]int{}
	}
	for _, oc := range allOutcomes {
		if _, ok := line[string(oc)]; ok {
			o.n[src][oc]++
		}
	}
	return len(p), nil
}

func (o *outcomes) get(src string, oc idem.Outcome) int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.n[src][oc]
}

// queue holds the deliveries still to make. A failed delivery goes back in
// at a random place, as a queue's or a sender's redelivery comes in no set
// order.
type queue[T any] struct {
	mu      sync.Mutex
	wake    *sync.Cond
	items   []T
	pending int // queued or in flight
	rng     *rand.Rand
}

func newQueue[T any](items []T, rng *rand.Rand) *queue[T] {
	q := &queue[T]{items: items, pending: len(items), rng: rng}
	q.wake = sync.NewCond(&q.mu)
	return q
}

// take removes up to n deliveries, passing over those fit refuses. It
// waits while every remaining delivery is in flight, and returns nil once
// all have succeeded (or been given up).
func (q *queue[T]) take(n int, fit func(batch []T, d T) bool) []T {
	q.mu.Lock()
	defer q.mu.Unlock()
	for len(q.items) == 0 && q.pending > 0 {
		q.wake.Wait()
	}
	var batch []T
	rest := q.items[:0]
	for _, d := range q.items {
		if len(batch) < n && (fit == nil || fit(batch, d)) {
			batch = append(batch, d)
		} else {
			rest = append(rest, d)
		}
	}
	clear(q.items[len(rest):])
	q.items = rest
	return batch
}

// settle ends a batch of delivered deliveries; retry go back in.
func (q *queue[T]) settle(delivered int, retry []T) {
	q.mu.Lock()
	for _, d := range retry {
		q.items = slices.Insert(q.items, q.rng.IntN(len(q.items)+1), d)
	}
	q.pending -= delivered - len(retry)
	q.mu.Unlock()
	q.wake.Broadcast()
}
