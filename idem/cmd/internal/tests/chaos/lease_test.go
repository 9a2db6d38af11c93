package chaos_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/idemkit/kit/idem"
	"github.com/idemkit/kit/idem/cmd/internal/receipts"
	"github.com/idemkit/kit/idem/cmd/internal/testphase"
	"github.com/idemkit/kit/idem/idemtest"
)

var leaseMessages = flag.Int("chaos.leasemessages", 150, "messages TestChaosLease sends")

const (
	leaseEnvironments = 4  // Stores, each an execution environment with its own faulted client
	leaseWorkers      = 12 // concurrent deliveries
	receiptFaultRate  = 0.05
)

// TestChaosLease: handlers that call out under the lease, with DynamoDB
// faulted as in TestChaosReplay and the receipts service failing (503),
// losing answers after it issued the receipt, and slow; every message
// delivered 1 to 4 times at once across environments, every failure
// redelivered. Each message's effect lands once, each gets exactly one
// receipt, and no two calls with one key are ever in flight together.
func TestChaosLease(t *testing.T) {
	start := time.Now()
	tb := newTables(t)
	rs := startReceipts(t)
	rs.SetLatency(2 * time.Millisecond)
	faults := dynamoFaults()
	phase := testphase.Start(t, "chaos lease", "%d messages calling out under the lease across %d environments, each delivered 1 to 4 times at once, "+
		"%.0f%% of DynamoDB requests and %.0f%% of receipts calls faulted", *leaseMessages, leaseEnvironments, 100*faultShare(faults), 200*receiptFaultRate)
	client := idemtest.Client(idemtest.Endpoint(t), faults.Option, quickRetries)
	var counts outcomes
	stores := make([]*idem.Store, leaseEnvironments)
	for i := range stores {
		s, err := idem.New(client, tb.processed, func(o *idem.Options) {
			o.Observers = []idem.Observer{idemtest.EMF(t, &counts)}
			o.Logger = slog.New(slog.DiscardHandler)
		})
		if err != nil {
			t.Fatal(err)
		}
		stores[i] = s
	}
	httpc := &http.Client{Timeout: 2 * time.Second}
	handler := func(m *message) idem.Handler {
		return func(ctx context.Context, _ idem.Message) (idem.Effect, error) {
			l, _ := idem.LeaseFromContext(ctx)
			if _, err := obtainReceipt(ctx, httpc, rs.URL(), l.Key, m); err != nil {
				return idem.Effect{}, err
			}
			return idem.Effect{Writes: tb.effect(m.id, m.account, m.cents)}, nil
		}
	}

	rng := rand.New(rand.NewPCG(*seed, 0x1ea5e))
	msgs := make([]*message, *leaseMessages)
	var work []*message
	for i := range msgs {
		msgs[i] = &message{id: fmt.Sprint("lease-", i), key: fmt.Sprint("key-", i), account: fmt.Sprint("acc-", i%accounts),
			cents: 1 + rng.IntN(1000), copies: 1 + rng.IntN(4)}
		for range msgs[i].copies {
			work = append(work, msgs[i])
		}
	}
	// Copies of a message sit next to each other, so they race.
	ch := make(chan *message, len(work))
	for _, m := range work {
		ch <- m
	}
	var (
		pending   atomic.Int64
		heldCount atomic.Int64
		fencedN   atomic.Int64
		wg        sync.WaitGroup
		mu        sync.Mutex
	)
	pending.Store(int64(len(work)))
	for w := range leaseWorkers {
		wg.Go(func() {
			wrng := rand.New(rand.NewPCG(*seed, uint64(w)))
			for pending.Load() > 0 {
				var m *message
				select {
				case m = <-ch:
				case <-time.After(50 * time.Millisecond):
					continue
				}
				mu.Lock()
				switch x := wrng.Float64(); {
				case x < receiptFaultRate:
					rs.FailNext(1, 503)
				case x < 2*receiptFaultRate:
					rs.DropAnswerNext(1)
				}
				mu.Unlock()
				store := stores[wrng.IntN(len(stores))]
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				_, err := store.ProcessLeased(ctx, idem.Message{ID: m.key, Source: "chaos-lease", Payload: []byte(m.id)}, handler(m))
				cancel()
				if err == nil {
					m.ok.Add(1)
					pending.Add(-1)
					continue
				}
				m.failed.Add(1)
				var held *idem.LeaseHeldError
				if errors.As(err, &held) && int(m.failed.Load()-m.failedOther.Load()) <= giveUp/2 {
					// As SQS would, the record comes back once its visibility
					// timeout (here the lease's end) has passed; waiting out a
					// lease is no failure to count against the give-up, which
					// 4 racing copies would otherwise spend within one lease.
					heldCount.Add(1)
					time.AfterFunc(time.Until(held.Until), func() { ch <- m })
					continue
				}
				m.failedOther.Add(1)
				switch {
				case errors.Is(err, idem.ErrFenced):
					fencedN.Add(1)
				case !errors.Is(err, idem.ErrRetryable) && !isReceiptError(err):
					t.Errorf("%s: a failure no retry fixes: %v", m.id, err)
				}
				if int(m.failedOther.Load()) > giveUp*4 {
					t.Errorf("%s: given up after %d failures other than a live lease: %v", m.id, m.failedOther.Load(), err)
					pending.Add(-1)
					continue
				}
				time.Sleep(time.Duration(wrng.IntN(20)) * time.Millisecond)
				ch <- m
			}
		})
	}
	wg.Wait()

	ledger := tb.scan(t, tb.ledger, "id", "applied")
	deliveries, double, lost := 0, 0, 0
	for _, m := range msgs {
		deliveries += int(m.ok.Load() + m.failed.Load())
		switch n := ledger[m.id]; {
		case n == 0:
			lost++
			t.Errorf("%s: never applied", m.id)
		case n > 1:
			double++
			t.Errorf("%s: applied %d times", m.id, n)
		}
		if _, ok := rs.Receipt("chaos-lease#" + m.key); !ok {
			t.Errorf("%s: no receipt", m.id)
		}
	}
	st := rs.Stats()
	byFault := map[string]int{}
	for _, c := range rs.Calls() {
		byFault[c.Fault]++
	}
	if byFault["fail"] == 0 || byFault["drop"] == 0 {
		t.Errorf("want receipts calls failed and answers dropped, got %v", byFault)
	}
	if rs.Issued() != len(msgs) || rs.MaxInFlight() != 1 {
		t.Errorf("receipts: want %d issued and at most 1 call in flight per key, got %d and %d", len(msgs), rs.Issued(), rs.MaxInFlight())
	}
	everyKind(t, "DynamoDB", idemtest.FaultKinds, faults)
	fc := faults.Counts()
	faulted := 0
	for _, k := range idemtest.FaultKinds {
		faulted += fc[k]
	}
	t.Logf("chaos lease (seed %d): %d messages, %d deliveries (%d planned), %d DynamoDB requests, %d faulted (%.1f%%), "+
		"receipts %+v (faults %v), %d met a live lease, %d fenced, %d double effects, %d lost, %s",
		*seed, len(msgs), deliveries, len(work), faults.Requests(), faulted, 100*float64(faulted)/float64(max(1, faults.Requests())),
		st, byFault, heldCount.Load(), fencedN.Load(), double, lost, time.Since(start).Round(100*time.Millisecond))
	phase.End("%d messages, %d deliveries, %d DynamoDB requests faulted (%s), %d receipts issued, %d double, %d lost", len(msgs), deliveries, faulted, contention(fc), rs.Issued(), double, lost)
}

// receiptError is a failed receipts call.
type receiptError struct{ msg string }

func (e *receiptError) Error() string { return "receipts: " + e.msg }

func isReceiptError(err error) bool {
	var re *receiptError
	return errors.As(err, &re)
}

// obtainReceipt POSTs m's credit with key as its Idempotency-Key, as the
// reference functions do (functions/internal/credit.Receipts).
func obtainReceipt(ctx context.Context, c *http.Client, url, key string, m *message) (string, error) {
	body, _ := json.Marshal(map[string]any{"id": m.key, "account": m.account, "cents": m.cents})
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	req.Header.Set("Idempotency-Key", key)
	resp, err := c.Do(req)
	if err != nil {
		return "", &receiptError{err.Error()}
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var out struct {
		Receipt string `json:"receipt"`
	}
	if (resp.StatusCode != 200 && resp.StatusCode != 201) || json.Unmarshal(b, &out) != nil || out.Receipt == "" {
		return "", &receiptError{fmt.Sprintf("%d %s", resp.StatusCode, b)}
	}
	return out.Receipt, nil
}

func startReceipts(t *testing.T) *receipts.Server {
	t.Helper()
	rs, err := receipts.Start("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rs.Close() })
	return rs
}
