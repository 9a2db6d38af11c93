package chaos_test

import (
	"flag"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/idemkit/kit/idem"
	"github.com/idemkit/kit/idem/cmd/internal/testphase"
	"github.com/idemkit/kit/idem/idemtest"
)

// The soaks' sizes: the defaults are make test's, large enough that
// every fault kind each soak injects is met many times over (each soak
// fails when one is not); make chaos runs them at the sizes whose figures
// the README and doc.go cite (2,000, 400, 2,000 and 1,200).
var (
	messages = flag.Int("chaos.messages", 500, "messages TestChaosReplay sends, half through each adapter")
	seed     = flag.Uint64("chaos.seed", 1, "seed of the soaks' plans and of their injected faults")
)

const (
	faultRate  = 0.03 // per kind, per DynamoDB request: 21% in all (seven kinds)
	accounts   = 8    // credited by both adapters
	sqsWorkers = 4    // concurrent invokes of up to 10 records, half with BatchTransactions
	webWorkers = 16   // concurrent webhook senders
)

// TestChaosReplay is the kit's headline figure: with at least 10% of
// DynamoDB requests faulted, every message delivered 1 to 5 times, in
// shuffled order, by concurrent workers, through both adapters (the SQS one
// in both of its modes), and every failure redelivered until it succeeds,
// each message's effect lands exactly once and no message is lost.
func TestChaosReplay(t *testing.T) {
	start := time.Now()
	tb := newTables(t)
	faults := dynamoFaults()
	phase := testphase.Start(t, "chaos replay", "%d messages through both adapters, each delivered 1 to 5 times, %.0f%% of DynamoDB requests faulted",
		*messages, 100*faultShare(faults))
	var counts outcomes
	store, err := idem.New(idemtest.Client(idemtest.Endpoint(t), faults.Option, quickRetries), tb.processed, func(o *idem.Options) {
		o.Observers = []idem.Observer{idemtest.EMF(t, &counts)}
		o.Logger = slog.New(slog.DiscardHandler)
	})
	if err != nil {
		t.Fatal(err)
	}

	rng := rand.New(rand.NewPCG(*seed, 0x5eed))
	msgs := make([]*message, *messages)
	for i := range msgs {
		kind := "sqs"
		if i%2 == 1 {
			kind = "web"
		}
		msgs[i] = &message{id: fmt.Sprint(kind, "-", i), key: fmt.Sprint("key-", i), form: i / 2 % 3,
			account: fmt.Sprint("acc-", i/2%accounts), cents: 1 + rng.IntN(1000), copies: 1 + rng.IntN(5)}
	}
	var sqsMsgs, webMsgs []*message
	for _, m := range msgs {
		if m.id[0] == 's' {
			sqsMsgs = append(sqsMsgs, m)
		} else {
			webMsgs = append(webMsgs, m)
		}
	}
	sqs := newSQSRun(t, store, tb, sqsMsgs, func(ds []*sqsDelivery) *queue[*sqsDelivery] {
		rng.Shuffle(len(ds), func(i, j int) { ds[i], ds[j] = ds[j], ds[i] })
		return newQueue(ds, rand.New(rand.NewPCG(*seed, 1)))
	})
	web := newWebRun(t, store, tb, webMsgs, func(ds []*webDelivery) *queue[*webDelivery] {
		rng.Shuffle(len(ds), func(i, j int) { ds[i], ds[j] = ds[j], ds[i] })
		return newQueue(ds, rand.New(rand.NewPCG(*seed, 2)))
	})
	var wg sync.WaitGroup
	for i := range sqsWorkers {
		wg.Go(func() { sqs.worker(i%2 == 1) })
	}
	for range webWorkers {
		wg.Go(web.worker)
	}
	wg.Wait()
	elapsed := time.Since(start)

	// Every message's effect exactly once, by its ledger item.
	ledger := tb.scan(t, tb.ledger, "id", "applied")
	var planned, deliveries, redelivered, double, lost int
	want := map[string]int{}
	for _, m := range msgs {
		ok, failed := int(m.ok.Load()), int(m.failed.Load())
		planned += m.copies
		deliveries += ok + failed
		redelivered += failed
		want[m.account] += m.cents
		switch n := ledger[m.id]; {
		case n == 0:
			lost++
			t.Errorf("%s: its effect was never applied (%d of %d deliveries succeeded, %d failed)", m.id, ok, m.copies, failed)
		case n > 1:
			double++
			t.Errorf("%s: its effect was applied %d times", m.id, n)
		case ok != m.copies:
			lost++
			t.Errorf("%s: %d of its %d deliveries succeeded (%d failed); every one should, in the end", m.id, ok, m.copies, failed)
		}
		delete(ledger, m.id)
	}
	for id, n := range ledger {
		t.Errorf("the ledger holds %s (%d), which no message names", id, n)
	}
	for account, cents := range tb.scan(t, tb.accounts, "account", "balance") {
		if cents != want[account] {
			t.Errorf("balance of %s: want %d, got %d", account, want[account], cents)
		}
		delete(want, account)
	}
	for account := range want {
		t.Errorf("%s was never credited", account)
	}

	// Every failure was a transient one, and the faults were what was asked.
	for _, src := range []string{"chaos-credits", "chaos-webhook"} {
		for _, oc := range []idem.Outcome{idem.KeyReuse, idem.Rejected, idem.Refused} {
			if n := counts.get(src, oc); n != 0 {
				t.Errorf("%s: want no %s outcome, got %d", src, oc, n)
			}
		}
	}
	// The Store counted each delivery once, as the senders saw it.
	for _, side := range []struct {
		src  string
		msgs []*message
	}{{"chaos-credits", sqsMsgs}, {"chaos-webhook", webMsgs}} {
		ok, failed := 0, 0
		for _, m := range side.msgs {
			ok, failed = ok+int(m.ok.Load()), failed+int(m.failed.Load())
		}
		// A webhook copy that met another in flight in its process was
		// answered 409, counted InFlight: a failure to its sender, who
		// retries.
		done := counts.get(side.src, idem.Processed) + counts.get(side.src, idem.Duplicate)
		notDone := counts.get(side.src, idem.Failed) + counts.get(side.src, idem.InFlight)
		if done != ok || notDone != failed {
			t.Errorf("%s: the metrics count %d done and %d failed or in flight; the senders saw %d and %d",
				side.src, done, notDone, ok, failed)
		}
	}
	if n := counts.get("chaos-webhook", idem.Duplicate); n != int(web.replayed.Load()) {
		t.Errorf("webhook: %d duplicates but %d answers marked Idempotent-Replayed", n, web.replayed.Load())
	}
	for status, n := range web.statuses {
		if status != 500 && status != 503 && status != 409 {
			t.Errorf("webhook: %d answers %d; only 503 (transient), 500 or 409 (a copy in flight) may answer a valid delivery", n, status)
		}
	}
	fc := faults.Counts()
	faulted := 0
	for _, k := range idemtest.FaultKinds {
		faulted += fc[k]
		if fc[k] == 0 {
			t.Errorf("no %s fault was injected", k)
		}
	}
	requests := faults.Requests()
	if share := float64(faulted) / float64(requests); share < 0.10 {
		t.Errorf("want at least 10%% of DynamoDB requests faulted, got %.1f%% (%d of %d)", 100*share, faulted, requests)
	}
	duplicates := counts.get("chaos-credits", idem.Duplicate) + counts.get("chaos-webhook", idem.Duplicate)
	t.Logf("chaos (seed %d): %d messages (%d SQS, %d webhook), %d deliveries (%d planned + %d after a failure), "+
		"%d DynamoDB requests, %d faulted (%.1f%%: %v), "+
		"%d duplicates (%d webhook replays), %d double effects, %d lost messages, %s",
		*seed, len(msgs), len(sqsMsgs), len(webMsgs), deliveries, planned, redelivered,
		requests, faulted, 100*float64(faulted)/float64(requests),
		fc,
		duplicates, web.replayed.Load(), double, lost, elapsed.Round(100*time.Millisecond))
	if n := sqs.gaveUp.Load() + web.gaveUp.Load(); n > 0 {
		t.Errorf("%d deliveries were given up after %d failures each", n, giveUp)
	}
	phase.End("%d messages, %d deliveries, %d DynamoDB requests faulted (%s), %d double, %d lost", len(msgs), deliveries, faulted, contention(fc), double, lost)
}

// quickRetries keeps the SDK's standard retryer (3 attempts, one
// ClientRequestToken across them, the retry quota) but waits at most
// 20 ms × 2^attempt between attempts instead of up to 20 s: the waits
// change how long the run takes, not what it proves.
func quickRetries(o *dynamodb.Options) {
	o.Retryer = retry.NewStandard(func(so *retry.StandardOptions) {
		so.Backoff = retry.BackoffDelayerFunc(func(attempt int, _ error) (time.Duration, error) {
			return rand.N(20 * time.Millisecond << min(attempt, 6)), nil
		})
	})
}
