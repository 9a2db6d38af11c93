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

// TestExpected: a delivery's expected time is its calls as they
// overlap: a first delivery its transaction's, a duplicate without a read
// a cancelled transaction's, one whose read answered before its
// transaction was sent a read's, one whose transaction was sent the
// faster of the two.
func TestExpected(t *testing.T) {
	if got := (quantiles{10, 10}).mean(); got != 10 {
		t.Errorf("a constant's mean: expect 10, got %v", got)
	}
	sigma1 := quantiles{10, 10 * math.Exp(z99)} // sigma 1
	if got, want := sigma1.mean(), 10*math.Exp(0.5); math.Abs(got-want) > 1e-9 {
		t.Errorf("expect %v, got %v", want, got)
	}
	for _, tc := range []struct {
		name string
		a, b quantiles
		want float64
	}{
		{"two constants: the smaller", quantiles{4, 4}, quantiles{25, 25}, 4},
		{"a distribution beside a constant far above it: its own mean", sigma1, quantiles{1000, 1000}, sigma1.mean()},
		{"one distribution twice: below its mean", sigma1, sigma1, -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := meanMin(tc.a, tc.b)
			if tc.want < 0 {
				if got >= tc.a.mean() || got <= 0 {
					t.Errorf("expect between 0 and %v, got %v", tc.a.mean(), got)
				}
				return
			}
			if math.Abs(got-tc.want) > 0.01*tc.want {
				t.Errorf("expect %v within 1%%, got %v", tc.want, got)
			}
		})
	}
	m, err := parseModel("test", []byte(testModel))
	if err != nil {
		t.Fatal(err)
	}
	get, _ := m.lookup("GetItem", 1, false)
	tx, _ := m.lookup("TransactWriteItems", 2, false)
	cancelled, _ := m.lookup("TransactWriteItems", 2, true)
	// Two first deliveries (one with a read beside its transaction) and
	// four duplicates: one without a read, one whose read came back
	// during its handler, two whose transaction was sent.
	st := streamStats{
		first: make([]time.Duration, 2), dup: make([]time.Duration, 4),
		opsFirst: map[string]int{"GetItem": 1, "TransactWriteItems": 2},
		opsDup:   map[string]int{"GetItem": 3, "TransactWriteItems": 3},
		fates:    [txFates]int{txNotStarted: 1, txCalledOff: 1, txAnswered: 1},
	}
	want := (2*tx.mean() + cancelled.mean() + get.mean() + 2*meanMin(get, cancelled)) / 6
	if got := expectedMs(m, st); math.Abs(got-want) > 1e-9 {
		t.Errorf("expect %v, got %v", want, got)
	}
}

func TestFateOf(t *testing.T) {
	tx := func(n int) map[string]int { return map[string]int{"TransactWriteItems": n} }
	for _, tc := range []struct {
		name   string
		ops    map[string]int
		sent   sends
		want   txFate
		wantOK bool
	}{
		{"no read", tx(1), sends{sent: tx(1)}, 0, false},
		{"read, no transaction", map[string]int{"GetItem": 1}, sends{}, txNotStarted, true},
		{"read, transaction started, not sent", map[string]int{"GetItem": 1, "TransactWriteItems": 1}, sends{}, txNotSent, true},
		{"read, transaction called off in flight", map[string]int{"GetItem": 1, "TransactWriteItems": 1}, sends{sent: tx(1), calledOff: tx(1)}, txCalledOff, true},
		{"read, transaction answered", map[string]int{"GetItem": 1, "TransactWriteItems": 1}, sends{sent: tx(1)}, txAnswered, true},
		{"read, transaction left to run", map[string]int{"GetItem": 1, "TransactWriteItems": 1}, sends{sent: tx(1), unwaited: tx(1)}, txUnwaited, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := fateOf(tc.ops, tc.sent)
			if ok != tc.wantOK || ok && got != tc.want {
				t.Errorf("expect %v, %v; got %v, %v", tc.want, tc.wantOK, got, ok)
			}
		})
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
	// A duplicate whose transaction was started is billed for it only if
	// it reached HTTP.
	st := stormStream(1, 1)
	firsts, dups := st.timed()
	ss := &streamStats{
		opsFirst: map[string]int{"TransactWriteItems": firsts}, sentFirst: map[string]int{"TransactWriteItems": firsts},
		opsDup: map[string]int{"GetItem": dups, "TransactWriteItems": dups}, sentDup: map[string]int{"GetItem": dups, "TransactWriteItems": dups / 2},
	}
	_, dup, _ := messageCost(st, ss)
	if want := (ruCost{0.5, 1, 2}); dup != want {
		t.Errorf("half the duplicates' transactions sent: expect %v a duplicate, got %v", want, dup)
	}
	ss.sentDup = nil // as bench.js counts: what was started
	if _, dup, _ = messageCost(st, ss); dup != (ruCost{0.5, 2, 4}) {
		t.Errorf("no sends counted: expect the started calls billed, got %v", dup)
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
		// Each delivery before the read sends its transaction; the read
		// goes beside the 8th's, which it may call off before it starts.
		if got := e.Calls.Count("TransactWriteItems"); i < 7 && got != i+1 || i == 7 && got != 7 && got != 8 {
			t.Fatalf("after delivery %d: expect %d transactions, got %d", i+1, min(i+1, 8), got)
		}
	}
}

// TestStreamsCount: the storms and the twice stream through this kit and
// the Go two-phase lock on the local server. After the warm-up this kit
// reads every duplicate's claim; a first delivery is its transaction
// alone when its record carries its receive count, its transaction with a
// read beside when the sender counts nothing (the uncounted storm, and
// Store.Process with no Attempt at 50% duplicates); no transaction is
// sent that was not started, nor called off in flight that was not sent;
// the two-phase lock makes its three writes and one; nothing is credited
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
		kitFirst := map[string]int{"GetItem": firsts, "TransactWriteItems": firsts}
		if st.via == viaSQSCounted {
			kitFirst = map[string]int{"TransactWriteItems": firsts}
		}
		for _, tc := range []struct {
			name  string
			got   streamStats
			first map[string]int
			dup   map[string]int // nil: the kit's, checked below
		}{
			{"kit", stats[s][0][0], kitFirst, nil},
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
				if tc.dup != nil && !maps.Equal(g.opsDup, tc.dup) {
					t.Errorf("duplicates: expect calls %v, got %v", tc.dup, g.opsDup)
				}
				if tc.dup == nil {
					fates := 0
					for _, f := range g.fates {
						fates += f
					}
					if g.opsDup["GetItem"] != dups || fates != dups {
						t.Errorf("duplicates: expect %d reads, one each, got %v (fates %v)", dups, g.opsDup, g.fates)
					}
				}
				for _, side := range []struct{ started, sent, off map[string]int }{{g.opsFirst, g.sentFirst, g.offFirst}, {g.opsDup, g.sentDup, g.offDup}} {
					for op, c := range side.sent {
						if c > side.started[op] || side.off[op] > c {
							t.Errorf("%s: expect called off ≤ sent ≤ started, got %d, %d, %d", op, side.off[op], c, side.started[op])
						}
					}
				}
				if g.doubles != 0 {
					t.Errorf("expect no double effects, got %d", g.doubles)
				}
			})
		}
	}
}

// TestTransactionFates: through the model with a slow transaction (300
// ms) and a read of 30, a duplicate whose read answers first calls its
// transaction off in flight, and one whose read comes back while its
// handler runs (100 ms) never starts it;
// a first delivery's transaction is answered, the read beside it finding
// nothing. The counters see each as it happened.
func TestTransactionFates(t *testing.T) {
	m, err := parseModel("slow transactions", []byte(`{"source": "test", "figures": [
		{"operation": "PutItem", "p50Ms": 2, "p99Ms": 2},
		{"operation": "GetItem", "p50Ms": 30, "p99Ms": 30},
		{"operation": "TransactWriteItems", "items": 2, "p50Ms": 300, "p99Ms": 300}]}`))
	if err != nil {
		t.Fatal(err)
	}
	p, _ := proxied(t, m)
	calls, sent := &idemtest.CallCounter{}, &sendCounter{}
	c := idemtest.Client(p.URL, calls.Option, sent.Option)
	processed := idemtest.ProcessedTable(t, c)
	accounts := idemtest.CreateTable(t, c, idemtest.Table{Name: "fates-accounts", HashKey: "account"})
	// Any duplicate lifts the share past this: the third delivery reads.
	store, err := idem.New(c, processed, quietStore, func(o *idem.Options) { o.ReadFirstAbove = 0.01 })
	if err != nil {
		t.Fatal(err)
	}
	handler := func(hold time.Duration) idem.Handler {
		return func(context.Context, idem.Message) (idem.Effect, error) {
			time.Sleep(hold)
			return idem.Effect{Writes: []types.TransactWriteItem{{Update: creditUpdate(accounts, message{account: "a", cents: 1})}}}, nil
		}
	}
	for _, tc := range []struct {
		name     string
		id       string
		hold     time.Duration
		outcome  idem.Outcome
		read     bool
		fate     txFate
		sentTx   int
		offTx    int
		startTx  int
		readFate bool
	}{
		{"first delivery, no read", "m-1", 0, idem.Processed, false, 0, 1, 0, 1, false},
		{"duplicate, no read yet", "m-1", 0, idem.Duplicate, false, 0, 1, 0, 1, false},
		{"duplicate, read answers first", "m-1", 0, idem.Duplicate, true, txUnwaited, 1, 0, 1, true},
		{"duplicate, read back during the handler", "m-1", 100 * time.Millisecond, idem.Duplicate, true, txNotStarted, 0, 0, 0, true},
		{"first delivery, read beside", "m-2", 0, idem.Processed, true, txAnswered, 1, 0, 1, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before, sentBefore, mark := countOps(calls), sent.snapshot(), &sendMark{}
			res, err := store.Process(withSendMark(context.Background(), mark), idem.Message{ID: tc.id, Source: "fates", Payload: []byte(tc.id)}, handler(tc.hold))
			if err != nil || res.Outcome != tc.outcome {
				t.Fatalf("expect %v, got %v, %v", tc.outcome, res.Outcome, err)
			}
			ops, sn := opsSince(calls, before), sent.since(sentBefore)
			sn.unwaited = mark.unwaited()
			if got := ops["GetItem"] == 1; got != tc.read {
				t.Errorf("expect a read %v, got calls %v", tc.read, ops)
			}
			if ops["TransactWriteItems"] != tc.startTx || sn.sent["TransactWriteItems"] != tc.sentTx || sn.calledOff["TransactWriteItems"] != tc.offTx {
				t.Errorf("expect the transaction started %d, sent %d, called off in flight %d; got %d, %d, %d",
					tc.startTx, tc.sentTx, tc.offTx, ops["TransactWriteItems"], sn.sent["TransactWriteItems"], sn.calledOff["TransactWriteItems"])
			}
			if f, ok := fateOf(ops, sn); ok != tc.readFate || ok && f != tc.fate {
				t.Errorf("expect fate %v (%v), got %v (%v)", tc.fate, tc.readFate, f, ok)
			}
		})
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
	x.stats[0][lineKit][1] = stats(24, 8)      // mean 16
	x.stats[0][lineTwoPhase][1] = stats(23, 9) // mean 16: the kit's first is slower, its mean equal
	x.pt = &ptStreams{stats: [][]streamStats{{stats(1, 1), stats(38, 13)}}}
	r := report{servers: []server{{"local", ""}, {"model", ""}}, streams: x}
	got := r.streamsTargets()
	want := []bool{false, true, true, true, true} // two-phase first, mean; Powertools first, mean; doubles
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
