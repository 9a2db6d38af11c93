package main

import (
	"context"
	"fmt"
	"maps"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemkit/kit/idem"
	"github.com/idemkit/kit/idem/idemtest"
)

// TestStreamOrder: every message is delivered first, then its
// duplicates, as many as designed; only messages past the warm-up are
// timed; a seed gives one order.
func TestStreamOrder(t *testing.T) {
	const n = 100
	for _, tc := range []struct {
		st   stream
		dups func(i int) int
	}{
		{rareStream(n, 1), func(i int) int {
			if (i+1)%19 == 0 {
				return 1
			}
			return 0
		}},
		{stormStream(n, 1), func(int) int { return 2 }},
		{shareStream(n, 0.5, 1), func(int) int { return 1 }},
		{shareStream(n, 0.2, 1), func(i int) int {
			if (i+1)%4 == 0 {
				return 1
			}
			return 0
		}},
	} {
		t.Run(tc.st.name, func(t *testing.T) {
			seen := map[int]int{} // deliveries so far, by message
			for i, d := range tc.st.deliveries {
				if d.dup != (seen[d.msg] > 0) {
					t.Fatalf("delivery %d of message %d: expect dup %v, got %v", i, d.msg, seen[d.msg] > 0, d.dup)
				}
				if d.timed != (d.msg >= streamWarm) {
					t.Fatalf("delivery %d of message %d: expect timed %v, got %v", i, d.msg, d.msg >= streamWarm, d.timed)
				}
				seen[d.msg]++
				if d.attempt != seen[d.msg] {
					t.Fatalf("delivery %d of message %d: expect attempt %d, got %d", i, d.msg, seen[d.msg], d.attempt)
				}
			}
			if len(seen) != streamWarm+n {
				t.Fatalf("expect %d messages, got %d", streamWarm+n, len(seen))
			}
			for i := range streamWarm + n {
				if got, want := seen[i]-1, tc.dups(i); got != want {
					t.Errorf("message %d: expect %d duplicates, got %d", i, want, got)
				}
			}
			again := newStream(tc.st.name, tc.st.what, n, tc.st.perMessage, 1)
			if !slices.Equal(again.deliveries, tc.st.deliveries) {
				t.Error("expect the same seed to give the same order")
			}
		})
	}
	t.Run("messages interleave", func(t *testing.T) {
		// In the storm a duplicate comes while later messages are delivered
		// for the first time.
		st := stormStream(n, 1)
		firstsAfterDup := 0
		for i, d := range st.deliveries {
			if d.dup && slices.ContainsFunc(st.deliveries[i+1:], func(e delivery) bool { return !e.dup }) {
				firstsAfterDup++
			}
		}
		if firstsAfterDup < n {
			t.Errorf("expect most duplicates followed by first deliveries, got %d of %d", firstsAfterDup, 2*(streamWarm+n))
		}
	})
}

func TestParseSweepAt(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []float64
		bad  bool
	}{
		{in: "-1,0.1,0.5", want: []float64{-1, 0.1, 0.5}},
		{in: " 0.2 , ", want: []float64{0.2}},
		{in: "", want: nil},
		{in: "0", bad: true},
		{in: "x", bad: true},
	} {
		t.Run(tc.in, func(t *testing.T) {
			got, err := parseSweepAt(tc.in)
			if (err != nil) != tc.bad {
				t.Fatalf("expect error %v, got %v", tc.bad, err)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("expect %v, got %v", tc.want, got)
			}
		})
	}
}

// TestExpected: a delivery's expected time is its calls at their
// distributions' means, a duplicate's transaction at a cancelled one's.
func TestExpected(t *testing.T) {
	if got := (quantiles{10, 10}).mean(); got != 10 {
		t.Errorf("a constant's mean: expect 10, got %v", got)
	}
	sigma1 := quantiles{10, 10 * math.Exp(z99)} // sigma 1
	if got, want := sigma1.mean(), 10*math.Exp(0.5); math.Abs(got-want) > 1e-9 {
		t.Errorf("expect %v, got %v", want, got)
	}
	m, err := parseModel("test", []byte(testModel))
	if err != nil {
		t.Fatal(err)
	}
	mean := func(op string, items int, cancelled bool) float64 {
		q, _ := m.lookup(op, items, cancelled)
		return q.mean()
	}
	// Two first deliveries (a read and a transaction each) and two
	// duplicates (one read, one cancelled transaction).
	st := streamStats{
		first: make([]time.Duration, 2), dup: make([]time.Duration, 2),
		opsFirst: map[string]int{"GetItem": 2, "TransactWriteItems": 2},
		opsDup:   map[string]int{"GetItem": 1, "TransactWriteItems": 1},
	}
	want := (3*mean("GetItem", 1, false) + 2*mean("TransactWriteItems", 2, false) + mean("TransactWriteItems", 2, true)) / 4
	if got := expectedMs(m, st); math.Abs(got-want) > 1e-9 {
		t.Errorf("expect %v, got %v", want, got)
	}
}

// TestRequestUnits: the documented units of each side's calls.
func TestRequestUnits(t *testing.T) {
	for _, tc := range []struct {
		name string
		ops  map[string]float64
		dup  bool
		want ruCost
	}{
		{"kit, read first", map[string]float64{"GetItem": 1, "TransactWriteItems": 1}, false, ruCost{0.5, 4, 4}},
		{"kit's duplicate, a read", map[string]float64{"GetItem": 1}, true, ruCost{0.5, 0, 0}},
		{"kit's duplicate, a cancelled transaction", map[string]float64{"TransactWriteItems": 1}, true, ruCost{0, 2, 4}},
		{"Powertools' first", map[string]float64{"PutItem": 1, "UpdateItem": 2}, false, ruCost{0, 3, 3}},
		{"Powertools' duplicate", map[string]float64{"PutItem": 1}, true, ruCost{0, 1, 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := ruOf(tc.ops, tc.dup); got != tc.want {
				t.Errorf("expect %v, got %v", tc.want, got)
			}
		})
	}
	storm := ruOf(map[string]float64{"GetItem": 1, "TransactWriteItems": 1}, false).plus(ruOf(map[string]float64{"GetItem": 1}, true), 2)
	if got, want := storm.dollars(), fmt.Sprintf("$%.2f", 4*priceWRU+1.5*priceRRU); got != want {
		t.Errorf("a storm message's price: expect %s, got %s", want, got)
	}
}

// TestDefaultReadFirstAbove holds the library's default to the value
// the report names: a sender's share of duplicates moves 1/16 of the way
// to 1 with each, so after 6 duplicates of a processed message it is
// 0.321, after 5 0.276; the delivery after the 6th, and no earlier one,
// reads first.
func TestDefaultReadFirstAbove(t *testing.T) {
	if defaultReadFirstAbove != "0.3" {
		t.Fatalf("the bounds below are 0.3's; got %s", defaultReadFirstAbove)
	}
	e := idemtest.NewEnv(t)
	store, err := idem.New(e.Client, e.Processed, quietStore)
	if err != nil {
		t.Fatal(err)
	}
	h := func(context.Context, idem.Message) (idem.Effect, error) {
		return idem.Effect{Writes: []types.TransactWriteItem{{Update: creditUpdate(e.Accounts, message{account: "a", cents: 1})}}}, nil
	}
	msg := idem.Message{ID: "m-1", Source: "bench", Payload: []byte("{}")}
	for i := range 8 {
		if _, err := store.Process(context.Background(), msg, h); err != nil {
			t.Fatal(err)
		}
		wantReads := 0
		if i == 7 {
			wantReads = 1
		}
		if got := e.Calls.Count("GetItem"); got != wantReads {
			t.Fatalf("after delivery %d (%d duplicates before it): expect %d GetItem, got %d", i+1, i, wantReads, got)
		}
	}
	if got := e.Calls.Count("TransactWriteItems"); got != 7 {
		t.Errorf("expect 7 transactions (the first delivery and 6 duplicates), got %d", got)
	}
}

// TestStreamsCount: the storm through this kit and the floor on the
// local server: after the warm-up a duplicate is a read alone; a first
// delivery is its transaction alone when its record carries its receive
// count, a read and its transaction when it does not; the floor's calls
// are its own; nothing is credited twice.
func TestStreamsCount(t *testing.T) {
	servers := []server{{"local", idemtest.Endpoint(t)}}
	const n = 10
	st := stormStream(n, 1)
	stats, err := runStreams(context.Background(), servers, []stream{st}, []streamLine{streamLines[0], streamLines[1], floorLine}, "test")
	if err != nil {
		t.Fatal(err)
	}
	firsts, dups := st.timed()
	for _, tc := range []struct {
		name       string
		got        streamStats
		first, dup map[string]int
	}{
		{"kit, receive counts", stats[0][0][0], map[string]int{"TransactWriteItems": firsts}, map[string]int{"GetItem": dups}},
		{"kit, no receive counts", stats[0][1][0], map[string]int{"GetItem": firsts, "TransactWriteItems": firsts}, map[string]int{"GetItem": dups}},
		{"floor", stats[0][2][0], map[string]int{"TransactWriteItems": firsts}, map[string]int{"GetItem": dups}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if len(tc.got.first) != firsts || len(tc.got.dup) != dups {
				t.Errorf("expect %d and %d timed deliveries, got %d and %d", firsts, dups, len(tc.got.first), len(tc.got.dup))
			}
			if !maps.Equal(tc.got.opsFirst, tc.first) || !maps.Equal(tc.got.opsDup, tc.dup) {
				t.Errorf("expect calls %v and %v, got %v and %v", tc.first, tc.dup, tc.got.opsFirst, tc.got.opsDup)
			}
			if tc.got.doubles != 0 {
				t.Errorf("expect no double effects, got %d", tc.got.doubles)
			}
		})
	}
}

// TestCoalesce: deliveries of one key at once in one Store cost one
// call and one handler run per message.
func TestCoalesce(t *testing.T) {
	const n = 3
	res, err := runCoalesce(context.Background(), []server{{"local", idemtest.Endpoint(t)}}, n)
	if err != nil {
		t.Fatal(err)
	}
	w := res.rows[0]
	if w.calls() != n || w.ops["TransactWriteItems"] != n || w.runs != n || w.doubles != 0 {
		t.Errorf("expect %d calls, all TransactWriteItems, %d runs and no double effects; got %v, %d runs, %d doubles", n, n, w.ops, w.runs, w.doubles)
	}
	if w.outcomes[idem.Processed] != n || w.outcomes[idem.Duplicate] != n*(coalesceAt-1) || w.cached != n*(coalesceAt-1) {
		t.Errorf("expect %d Processed and %d Duplicates with no call, got %v and %d", n, n*(coalesceAt-1), w.outcomes, w.cached)
	}
	if got := (report{servers: []server{{"local", ""}}, coalesce: res}).coalesceTargets(); !got[0].met {
		t.Errorf("expect the target met, got %+v", got[0])
	}
}
