package idem_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/idemkit/kit/idem"
)

// TestDuplicatesInNumbersCostARead: once a sender's recent deliveries are
// mostly duplicates, a duplicate costs one GetItem and no transaction, and
// a first delivery a GetItem and its transaction; below the threshold, or
// with ReadFirstAbove negative, no read is made. A read that finds another
// payload's claim is key reuse, as the claim's condition would say.
func TestDuplicatesInNumbersCostARead(t *testing.T) {
	for _, tc := range []struct {
		name       string
		above      float64
		wantReads  bool
		dupGets    int // calls of a late duplicate
		dupTxs     int
		firstGets  int // calls of a late first delivery
		firstTxs   int
		reuseCalls int
	}{
		{"the default", 0, true, 1, 0, 1, 1, 1},
		{"never read first", -1, false, 0, 1, 0, 1, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, func(o *idem.Options) { o.ReadFirstAbove = tc.above })
			ctx := context.Background()
			deliver := func(id string, payload string) (idem.Result, int, int, error) {
				e.calls.Reset()
				res, err := e.store.Process(ctx, idem.Message{ID: id, Source: "storm", Payload: []byte(payload)}, e.creditHandler(nil))
				return res, e.calls.Count("GetItem"), e.calls.Count("TransactWriteItems"), err
			}
			// A storm: each message delivered three times.
			for i := range 12 {
				for range 3 {
					if _, _, _, err := deliver(fmt.Sprint("m-", i), "p"); err != nil {
						t.Fatal(err)
					}
				}
			}
			res, gets, txs, err := deliver("m-0", "p")
			t.Logf("a duplicate in the storm: %s, %d GetItem, %d TransactWriteItems", res.Outcome, gets, txs)
			if err != nil || res.Outcome != idem.Duplicate || gets != tc.dupGets || txs != tc.dupTxs {
				t.Errorf("a duplicate: want Duplicate with %d GetItem and %d transactions, got %v %v, %d and %d", tc.dupGets, tc.dupTxs, res.Outcome, err, gets, txs)
			}
			res, gets, txs, err = deliver("new", "p")
			if err != nil || res.Outcome != idem.Processed || gets != tc.firstGets || txs != tc.firstTxs {
				t.Errorf("a first delivery: want Processed with %d GetItem and %d transactions, got %v %v, %d and %d", tc.firstGets, tc.firstTxs, res.Outcome, err, gets, txs)
			}
			_, gets, txs, err = deliver("m-1", "another")
			if !errors.Is(err, idem.ErrKeyReuse) || gets+txs != tc.reuseCalls {
				t.Errorf("key reuse: want a *KeyReuseError after %d call, got %v after %d", tc.reuseCalls, err, gets+txs)
			}
			if got := e.balance(t, "acc-9"); got != 13*500 {
				t.Errorf("balance: want %d, got %d", 13*500, got)
			}
		})
	}
}

// TestReadFirstOnlyWhenDuplicatesAreMany: a sender whose deliveries are
// all first deliveries makes no read.
func TestReadFirstOnlyWhenDuplicatesAreMany(t *testing.T) {
	e := newEnv(t)
	for i := range 20 {
		e.calls.Reset()
		if _, err := e.store.Process(context.Background(), idem.Message{ID: fmt.Sprint("m-", i), Source: "calm"}, e.creditHandler(nil)); err != nil {
			t.Fatal(err)
		}
		if n := e.calls.Count("GetItem"); n != 0 {
			t.Fatalf("delivery %d: want no GetItem, got %d", i, n)
		}
	}
}

// TestRedeliveriesReadFirstDeliveriesDoNot: when the sender counts its
// deliveries (Message.Attempt, SQS's receive count), a redelivery storm
// makes the redeliveries read their claim first, and only them: a first
// attempt goes straight to its transaction, as does a duplicate the sender
// counts as a first attempt (a producer's resend), which its claim's
// condition still answers.
func TestRedeliveriesReadFirstDeliveriesDoNot(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	deliver := func(id string, attempt int) (idem.Outcome, int, int) {
		t.Helper()
		e.calls.Reset()
		res, err := e.store.Process(ctx, idem.Message{ID: id, Source: "queue", Payload: []byte("p"), Attempt: attempt}, e.creditHandler(nil))
		if err != nil {
			t.Fatal(err)
		}
		return res.Outcome, e.calls.Count("GetItem"), e.calls.Count("TransactWriteItems")
	}
	for i := range 12 { // a redelivery storm: each message received 3 times
		for attempt := 1; attempt <= 3; attempt++ {
			deliver(fmt.Sprint("m-", i), attempt)
		}
	}
	for _, tc := range []struct {
		name      string
		id        string
		attempt   int
		want      idem.Outcome
		gets, txs int
	}{
		{"a first attempt", "new", 1, idem.Processed, 0, 1},
		{"a redelivery", "m-0", 2, idem.Duplicate, 1, 0},
		{"a fourth receive, a redelivery too", "m-3", 4, idem.Duplicate, 1, 0},
		{"a count below 1, not counted", "m-4", -1, idem.Duplicate, 0, 1},
		{"a producer's resend, counted as a first attempt", "m-1", 1, idem.Duplicate, 0, 1},
		{"a sender that does not count, its own share", "m-2", 0, idem.Duplicate, 0, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, gets, txs := deliver(tc.id, tc.attempt)
			if got != tc.want || gets != tc.gets || txs != tc.txs {
				t.Errorf("want %v with %d GetItem and %d transactions, got %v with %d and %d", tc.want, tc.gets, tc.txs, got, gets, txs)
			}
		})
	}
}
