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
		{uncountedStormStream(n, 1), func(int) int { return 2 }},
		{twiceStream(n, 1), func(int) int { return 1 }},
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
			again := newStream(tc.st.order, tc.st.what, n, tc.st.perMessage, 1)
			if !slices.Equal(again.deliveries, tc.st.deliveries) {
				t.Error("expect the same seed to give the same order")
			}
		})
	}
	t.Run("the storms are one order", func(t *testing.T) {
		counted, uncounted := stormStream(n, 1), uncountedStormStream(n, 1)
		if !slices.Equal(counted.deliveries, uncounted.deliveries) || counted.name == uncounted.name {
			t.Error("expect the uncounted storm to be the counted storm's deliveries under a name of its own")
		}
		if counted.via != viaSQSCounted || uncounted.via != viaSQSUncounted || twiceStream(n, 1).via != viaProcess {
			t.Errorf("expect the counted storm via the SQS adapter with counts, the uncounted without, twice through Process; got %v, %v, %v", counted.via, uncounted.via, twiceStream(n, 1).via)
		}
	})
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

// TestExpected: a delivery's expected time is its calls one after
// another: a first delivery its transaction's, and a read's when it read
// first; a duplicate a read's or a cancelled transaction's.
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
	get, _ := m.lookup("GetItem", 1, false)
	tx, _ := m.lookup("TransactWriteItems", 2, false)
	cancelled, _ := m.lookup("TransactWriteItems", 2, true)
	// Two first deliveries (one read first) and three duplicates: two
	// answered by a read, one by a cancelled transaction.
	st := streamStats{
		first: make([]time.Duration, 2), dup: make([]time.Duration, 3),
		opsFirst: map[string]int{"GetItem": 1, "TransactWriteItems": 2},
		opsDup:   map[string]int{"GetItem": 2, "TransactWriteItems": 1},
	}
	want := (2*tx.mean() + 3*get.mean() + cancelled.mean()) / 5
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
	st := stormStream(1, 1)
	firsts, dups := st.timed()
	ss := &streamStats{opsFirst: map[string]int{"TransactWriteItems": firsts}, opsDup: map[string]int{"GetItem": dups / 2, "TransactWriteItems": dups / 2}}
	if _, dup, _ := messageCost(st, ss); dup != (ruCost{0.25, 1, 2}) {
		t.Errorf("half the duplicates read, half cancelled: expect %v a duplicate, got %v", ruCost{0.25, 1, 2}, dup)
	}
}

// TestDefaultReadFirstAbove holds the library's default to the value
// the report names: a class's share of duplicates moves 1/16 of the way
// to 1 with each, so after 6 duplicates it is 0.321, after 5 0.276. Eight
// messages, each settled by an environment (Store) of its own, then
// delivered again to one more that never saw them: each is of the class
// nobody counts in that Store, and a duplicate; the delivery after the
// 6th duplicate, and no earlier one, reads first, and each costs one
// call.
func TestDefaultReadFirstAbove(t *testing.T) {
	if defaultReadFirstAbove != "0.3" {
		t.Fatalf("the bounds below are 0.3's; got %s", defaultReadFirstAbove)
	}
	e := idemtest.NewEnv(t)
	last, err := idem.New(e.Client, e.Processed, quietStore)
	if err != nil {
		t.Fatal(err)
	}
	h := func(context.Context, idem.Message) (idem.Effect, error) {
		return idem.Effect{Writes: []types.TransactWriteItem{{Update: creditUpdate(e.Accounts, message{account: "a", cents: 1})}}}, nil
	}
	for i := range 8 {
		msg := idem.Message{ID: fmt.Sprint("m-", i), Source: "bench", Payload: []byte("{}")}
		own, err := idem.New(e.Client, e.Processed, quietStore)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := own.Process(context.Background(), msg, h); err != nil {
			t.Fatal(err)
		}
		e.Calls.Reset()
		res, err := last.Process(context.Background(), msg, h)
		if err != nil || res.Outcome != idem.Duplicate {
			t.Fatalf("delivery %d: expect Duplicate, got %v %v", i+1, res.Outcome, err)
		}
		gets, txs := e.Calls.Count("GetItem"), e.Calls.Count("TransactWriteItems")
		if wantRead := i >= 6; (gets == 1) != wantRead || gets+txs != 1 {
			t.Fatalf("duplicate %d (%d before it): expect a read %v and one call, got %d GetItem and %d transactions", i+1, i, wantRead, gets, txs)
		}
	}
}

// TestStreamsCount: the storms and the twice stream through this kit and
// the Go two-phase lock on the local server, one environment each. After
// the warm-up this kit answers every duplicate by a read of its claim
// alone (its key was settled in this environment, or its sender counted
// it a redelivery), and a first delivery is its transaction alone; the
// two-phase lock makes its three writes and one; nothing is credited
// twice.
func TestStreamsCount(t *testing.T) {
	servers := []server{{"local", idemtest.Endpoint(t)}}
	const n = 10
	streams := []stream{stormStream(n, 1), uncountedStormStream(n, 1), twiceStream(n, 1)}
	stats, err := runStreams(context.Background(), servers, streams, []streamLine{streamLines[lineKit], streamLines[lineTwoPhase]}, "test")
	if err != nil {
		t.Fatal(err)
	}
	for s, st := range streams {
		firsts, dups := st.timed()
		kitFirst := map[string]int{"TransactWriteItems": firsts}
		for _, tc := range []struct {
			name  string
			got   streamStats
			first map[string]int
			dup   map[string]int
		}{
			{"kit", stats[s][0][0], kitFirst, map[string]int{"GetItem": dups}},
			{"two-phase lock", stats[s][1][0], map[string]int{"PutItem": firsts, "UpdateItem": 2 * firsts}, map[string]int{"PutItem": dups}},
		} {
			t.Run(st.name+", "+tc.name, func(t *testing.T) {
				g := tc.got
				if len(g.first) != firsts || len(g.dup) != dups {
					t.Errorf("expect %d and %d timed deliveries, got %d and %d", firsts, dups, len(g.first), len(g.dup))
				}
				if !maps.Equal(g.opsFirst, tc.first) {
					t.Errorf("first deliveries: expect calls %v, got %v", tc.first, g.opsFirst)
				}
				if !maps.Equal(g.opsDup, tc.dup) {
					t.Errorf("duplicates: expect calls %v, got %v", tc.dup, g.opsDup)
				}
				if g.doubles != 0 {
					t.Errorf("expect no double effects, got %d", g.doubles)
				}
			})
		}
	}
}

// TestStreamsTargets: every stream's first-delivery p50 and mean are
// judged against each peer, met only when this kit's is at most the
// peer's.
func TestStreamsTargets(t *testing.T) {
	d := func(ms int) []time.Duration { return []time.Duration{time.Duration(ms) * time.Millisecond} }
	st := stormStream(1, 1)
	stats := func(first, dup int) streamStats { return streamStats{first: d(first), dup: d(dup)} }
	x := &streamsResult{streams: []stream{st}, lines: streamLines, stats: [][][]streamStats{make([][]streamStats, len(streamLines))}}
	for k := range streamLines {
		x.stats[0][k] = []streamStats{stats(1, 1), stats(1, 1)} // the local server's: not judged
	}
	x.stats[0][lineKit][1] = stats(25, 7)      // mean 16
	x.stats[0][lineTwoPhase][1] = stats(23, 9) // mean 16: the kit's first more than 5% slower, its mean equal
	x.pt = &ptStreams{stats: [][]streamStats{{stats(1, 1), stats(38, 13)}}}
	r := report{servers: []server{{"local", ""}, {"model", ""}}, streams: x}
	got := r.streamsTargets()
	want := []bool{false, true, true, true, true, true} // two-phase first, mean; Powertools first, mean; price; doubles
	if len(got) != len(want) {
		t.Fatalf("expect %d targets, got %d: %+v", len(want), len(got), got)
	}
	for i, tg := range got {
		if tg.met != want[i] {
			t.Errorf("%s (%s): expect met %v, got %v", tg.what, tg.measured, want[i], tg.met)
		}
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
