package chaos_test

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemkit/kit/idem"
	"github.com/idemkit/kit/idem/cmd/internal/testphase"
	"github.com/idemkit/kit/idem/idemtest"
	"github.com/idemkit/kit/idem/stream"
)

var aggregateCredits = flag.Int("chaos.aggregatecredits", 600, "credits TestChaosAggregate applies to its hot accounts")

const (
	hotAccounts    = 3    // the aggregates the credits fold into
	foldBatchSize  = 60   // the stream event source mapping's BatchSize: two transactions a batch (a claim and a ledger item each)
	foldKillRate   = 0.15 // per fold invoke, each of: killed before it commits, killed after its first transaction
	foldRedoRate   = 0.15 // per fold batch: handed over again after its checkpoint
	foldRoundsMost = 400  // a fold that needs more invokes makes no progress
)

// TestChaosAggregate: the hot-item path under the chaos suite's faults.
// Credits to three hot accounts, each delivered 1 to 4 times through a
// faulted DynamoDB, commit an entry each with their claim; a consumer of
// the entries table's stream (stream.Aggregate, also on a faulted
// DynamoDB) folds them into the balances, its invokes killed before they
// commit anything and killed mid-batch (after the first of the batch's
// transactions committed, the rest never sent), its batches handed over
// again after their checkpoint, each resumed from the record it reported.
// In the end each entry is folded once (its own ledger item counts the
// folds) and each balance is the sum of its credits.
func TestChaosAggregate(t *testing.T) {
	ctx := context.Background()
	tb := newTables(t)
	entries := idemtest.CreateTable(t, tb.client, idemtest.Table{Name: "entries", HashKey: "entry", Stream: true})
	phase := testphase.Start(t, "chaos aggregate", "%d credits to %d hot accounts, each delivered 1 to 4 times, as entries folded from their stream, "+
		"DynamoDB faulted, the fold killed before its commit and mid-batch", *aggregateCredits, hotAccounts)
	quiet := func(o *idem.Options) { o.Logger = slog.New(slog.DiscardHandler) }

	// The credits: an entry each, never contended.
	credits := dynamoFaults()
	store, err := idem.New(idemtest.Client(idemtest.Endpoint(t), credits.Option, quickRetries), tb.processed, quiet)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(*seed, 0xa66))
	msgs := make([]*message, *aggregateCredits)
	var work []*message
	want := map[string]int{}
	for i := range msgs {
		m := &message{id: fmt.Sprint("entry-", i), key: fmt.Sprint("credit-", i), account: fmt.Sprint("hot-", i%hotAccounts),
			cents: 1 + rng.IntN(1000), copies: 1 + rng.IntN(4)}
		msgs[i], want[m.account] = m, want[m.account]+m.cents
		for range m.copies {
			work = append(work, m)
		}
	}
	rng.Shuffle(len(work), func(i, j int) { work[i], work[j] = work[j], work[i] })
	hop1 := runUntilDone(t, work, outboxWorkers, func(m *message) error {
		_, err := store.Process(ctx, idem.Message{ID: m.key, Source: "credits", Payload: []byte(m.id)},
			func(context.Context, idem.Message) (idem.Effect, error) {
				w, err := idem.Put(entries, map[string]any{"entry": m.id, "account": m.account, "cents": m.cents})
				return idem.Effect{Writes: []types.TransactWriteItem{w}}, err
			})
		return err
	})

	// The fold, its DynamoDB faulted, its invokes killed.
	foldFaults := dynamoFaults() // twice the rate: the fold makes few calls, many records each
	foldFaults.Seed = *seed + 7
	for k, r := range foldFaults.Rates {
		foldFaults.Rates[k] = 2 * r
	}
	// The kill sits beneath the faults: it sees DynamoDB's own answer, so a
	// commit whose answer the faults then lose still kills the invoke, and
	// a mid-batch kill fires whenever a transaction of the batch commits.
	kill := &killAfterCommit{next: &http.Transport{MaxIdleConnsPerHost: 64}}
	foldFaults.Next = kill
	foldStore, err := idem.New(idemtest.Client(idemtest.Endpoint(t), foldFaults.Option, quickRetries), tb.processed, quiet)
	if err != nil {
		t.Fatal(err)
	}
	fold, err := stream.Aggregate(foldStore, func(_ context.Context, rec events.DynamoDBEventRecord) (idem.Effect, error) {
		img := rec.Change.NewImage
		cents, err := strconv.Atoi(img["cents"].Number())
		if err != nil {
			return idem.Effect{}, err
		}
		w := tb.effect(img["entry"].String(), img["account"].String(), cents) // its ledger item, and the balance
		return idem.Effect{Writes: w}, nil
	}, func(o *stream.AggregateOptions) { o.Logger = slog.New(slog.DiscardHandler) })
	if err != nil {
		t.Fatal(err)
	}
	records := idemtest.StreamRecords(t, tb.client, entries)
	if len(records) != len(msgs) {
		t.Fatalf("want %d entries in the stream, got %d", len(msgs), len(records))
	}
	esm := rand.New(rand.NewPCG(*seed, 0xf01d))
	var invokes, killedBefore, killedMid, redone, reported int
	for p := 0; p < len(records); {
		if invokes++; invokes > foldRoundsMost {
			t.Fatalf("the fold makes no progress at record %d of %d", p, len(records))
		}
		batch := records[p:min(p+foldBatchSize, len(records))]
		x := esm.Float64()
		// The last batch meets whichever of the fold's faults the draws
		// have not: every one at work at any size and seed.
		last := p+len(batch) == len(records)
		switch {
		case last && killedBefore == 0:
			x = 0
		case last && killedMid == 0:
			x = foldKillRate
		}
		switch {
		case x < foldKillRate: // killed before anything committed: the batch again
			killedBefore++
			continue
		case x < 2*foldKillRate: // killed after the first of its transactions committed
			ictx, cancel := context.WithCancel(ctx)
			kill.arm(cancel)
			_, _ = fold(ictx, events.DynamoDBEvent{Records: batch})
			if kill.disarm() {
				killedMid++
			}
			cancel()
			continue
		}
		resp, err := fold(ctx, events.DynamoDBEvent{Records: batch})
		if err != nil {
			t.Fatalf("fold: a function error: %v", err)
		}
		next := p + len(batch)
		if len(resp.BatchItemFailures) > 0 {
			reported++
			next = -1
			for i, r := range batch {
				if r.Change.SequenceNumber == resp.BatchItemFailures[0].ItemIdentifier {
					next = p + i
				}
			}
			if next < 0 {
				t.Fatalf("fold: reported sequence number %s is not in the batch", resp.BatchItemFailures[0].ItemIdentifier)
			}
		}
		if esm.Float64() < foldRedoRate || last && redone == 0 { // the checkpoint lost: the batch again
			redone++
			continue
		}
		p = next
	}

	folds := tb.scan(t, tb.ledger, "id", "applied")
	doubles, lost := 0, 0
	for _, m := range msgs {
		switch n := folds[m.id]; {
		case n > 1:
			doubles++
		case n < 1:
			lost++
		}
	}
	if doubles > 0 || lost > 0 {
		t.Errorf("entries folded twice: %d, never: %d", doubles, lost)
	}
	if got := tb.scan(t, tb.accounts, "account", "balance"); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("balances: want %v, got %v", want, got)
	}
	everyKind(t, "the credits' DynamoDB", idemtest.FaultKinds, credits)
	if killedBefore == 0 || killedMid == 0 || redone == 0 {
		t.Errorf("want every fault of the fold at work: killed before %d, mid-batch %d, batches redone %d", killedBefore, killedMid, redone)
	}
	t.Logf("chaos aggregate (seed %d): %d credits, %d deliveries (%d failed and redelivered), %d entries folded in %d invokes (killed %d before their commit and %d mid-batch, %d batches redone, %d reported a failure), DynamoDB faults %v and %v",
		*seed, len(msgs), hop1.deliveries, hop1.failed, len(records), invokes, killedBefore, killedMid, redone, reported, credits.Counts(), foldFaults.Counts())
	phase.End("%d credits, %d entries folded in %d invokes (killed %d before, %d mid-batch, %d redone), DynamoDB faults %s, %d folded twice, %d never",
		len(msgs), len(records), invokes, killedBefore, killedMid, redone, contention(foldFaults.Counts()), doubles, lost)
}

// killAfterCommit passes requests to next and, once armed, kills the
// invoke (cancels its context) as soon as one of its transactions has
// committed: the batch's later transactions are never sent, as when the
// function's process dies there.
type killAfterCommit struct {
	next   http.RoundTripper
	mu     sync.Mutex
	cancel context.CancelFunc
	fired  bool
}

func (k *killAfterCommit) arm(cancel context.CancelFunc) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.cancel, k.fired = cancel, false
}

// disarm says whether the kill fired since arm.
func (k *killAfterCommit) disarm() bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.cancel = nil
	return k.fired
}

func (k *killAfterCommit) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := k.next.RoundTrip(req)
	if err == nil && resp.StatusCode == http.StatusOK && strings.HasSuffix(req.Header.Get("X-Amz-Target"), ".TransactWriteItems") {
		k.mu.Lock()
		if k.cancel != nil && !k.fired {
			k.fired = true
			k.cancel()
		}
		k.mu.Unlock()
	}
	return resp, err
}
