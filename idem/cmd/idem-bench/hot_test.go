package main

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/idemkit/kit/idem/idemtest"
)

// TestHotQueue: the queue hands each environment at most its batch, a
// failed message comes back at once with its receive count one more, each
// failure counts as a delivery failed to the sender, each delivery has
// the deadline, and the run ends when every message is credited.
func TestHotQueue(t *testing.T) {
	const n, failFirst = 25, 2 // each message fails its first 2 deliveries
	msgs := hotMessages("q", n, 3)
	var (
		mu       sync.Mutex
		attempts = map[string][]int{}
		big      int
		noDL     int
	)
	deliver := func(ctx context.Context, batch []message) (failed []message) {
		mu.Lock()
		defer mu.Unlock()
		big = max(big, len(batch))
		if dl, ok := ctx.Deadline(); !ok || time.Until(dl) > hotDeadline {
			noDL++
		}
		for _, m := range batch {
			attempts[m.id] = append(attempts[m.id], m.attempt)
			if m.attempt <= failFirst {
				failed = append(failed, m)
			}
		}
		return failed
	}
	q := newHotQueue(msgs, 10)
	if err := q.run(context.Background(), []hotDeliver{deliver, deliver, deliver}, hotDeadline); err != nil {
		t.Fatal(err)
	}
	run := q.figures()
	if run.failed != failFirst*n || run.messages != n || len(run.credit) != n {
		t.Errorf("expect %d failed deliveries of %d messages, %d credits timed; got %d, %d, %d", failFirst*n, n, n, run.failed, run.messages, len(run.credit))
	}
	if big > 10 || noDL > 0 {
		t.Errorf("expect batches of at most 10, each with the deadline; got a batch of %d and %d without", big, noDL)
	}
	for _, m := range msgs {
		if got := fmt.Sprint(attempts[m.id]); got != "[1 2 3]" {
			t.Errorf("%s: expect receive counts [1 2 3], got %s", m.id, got)
		}
	}
	if run.wall <= 0 {
		t.Errorf("expect a wall time, got %v", run.wall)
	}
	t.Run("a message that never succeeds ends the run", func(t *testing.T) {
		q := newHotQueue(hotMessages("never", 2, 1), 1)
		q.maxReceives = 5
		err := q.run(context.Background(), []hotDeliver{func(_ context.Context, b []message) []message { return b }}, hotDeadline)
		if err == nil || !strings.Contains(err.Error(), "never-0") {
			t.Errorf("expect an error naming never-0, got %v", err)
		}
	})
}

// TestCheckCredits: balances against each account's messages, exactly.
func TestCheckCredits(t *testing.T) {
	c := idemtest.Client(idemtest.Endpoint(t))
	table := idemtest.CreateTable(t, c, idemtest.Table{Name: "hot-check", HashKey: "account"})
	ctx := context.Background()
	for account, cents := range map[string]int{hotAccount("c", 0): 5, hotAccount("c", 1): 2, hotAccount("c", 2): 3} {
		if _, err := c.UpdateItem(ctx, updateInput(creditUpdate(table, message{account: account, cents: cents}))); err != nil {
			t.Fatal(err)
		}
	}
	// 10 messages on 3 accounts: 4, 3 and 3.
	doubles, lost, err := checkCredits(ctx, c, table, "c", 10, 3)
	if err != nil || doubles != 1 || lost != 1 {
		t.Errorf("expect 1 double (account 0) and 1 lost (account 1), got %d, %d, %v", doubles, lost, err)
	}
}

// TestHotUnits: the documented units of each answer, ranges where the
// documentation says nothing, and their price per million credits.
func TestHotUnits(t *testing.T) {
	tally := newTally()
	add := func(op string, kind answer, requests, items int) {
		tally.answers[answerKey{op, kind}] += requests
		tally.actions[answerKey{op, kind}] += items
	}
	add("TransactWriteItems", answerOK, 10, 20)      // 40 WRU
	add("TransactWriteItems", answerCondition, 2, 4) // 4 to 8
	add("TransactWriteItems", answerConflict, 5, 10) // 0 to 20
	add("TransactWriteItems", answerThrottled, 3, 6) // nothing
	add("UpdateItem", answerOK, 7, 7)                // 7
	add("PutItem", answerCondition, 1, 1)            // 1
	add("UpdateItem", answerConflict, 4, 4)          // 0 to 4
	add("UpdateItem", answerThrottled, 9, 9)         // nothing
	add("GetItem", answerOK, 4, 4)                   // 2 RRU
	add("GetItem, consistent", answerOK, 1, 1)       // 1 RRU
	if got, want := hotUnits(tally), (ruCost{rru: 3, wruLow: 52, wruHigh: 80}); got != want {
		t.Errorf("expect %v, got %v", want, got)
	}
	run := hotRun{messages: 10, tally: tally}
	if got, want := run.perCredit().dollars(), fmt.Sprintf("$%.2f to $%.2f", 5.2*priceWRU+0.3*priceRRU, 8*priceWRU+0.3*priceRRU); got != want {
		t.Errorf("per million credits: expect %s, got %s", want, got)
	}
}

// TestHotCapped: what set a run's pace, in the order the report says.
func TestHotCapped(t *testing.T) {
	rate := localRate{singles: 200, txs: 100}
	type tallied struct {
		forwarded            map[string]int
		late                 int
		held                 time.Duration
		units                float64
		throttled, conflicts int
	}
	for _, tc := range []struct {
		name string
		t    tallied
		want string
	}{
		{"local server late", tallied{forwarded: map[string]int{"UpdateItem": 100}, late: 60}, "the local server (60% of its answers"},
		{"local server loaded", tallied{forwarded: map[string]int{"UpdateItem": 1600, "TransactWriteItems": 100}}, "the local server (0% of its answers well after the model's time; 90% of its measured rate)"},
		{"throttled", tallied{forwarded: map[string]int{"UpdateItem": 10}, throttled: 1}, "the model's partition limit"},
		{"partition nearly spent", tallied{forwarded: map[string]int{"UpdateItem": 10}, units: 3000}, "the model's partition limit"},
		{"held and met", tallied{forwarded: map[string]int{"TransactWriteItems": 10}, held: 9 * time.Second, conflicts: 3}, "the model's conflicts"},
		{"held, never met", tallied{forwarded: map[string]int{"TransactWriteItems": 10}, held: 9 * time.Second}, "the environments (8,"},
		{"often refused", tallied{forwarded: map[string]int{"TransactWriteItems": 10}, held: 5 * time.Second, conflicts: 3}, "the model's conflicts and the backoff after them"},
		{"environments", tallied{forwarded: map[string]int{"TransactWriteItems": 10}, held: 5 * time.Second, conflicts: 2}, "the environments (8,"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tl := newTally()
			tl.forwarded, tl.late, tl.heldFor["acc"], tl.units["acc"] = tc.t.forwarded, tc.t.late, tc.t.held, tc.t.units
			tl.answers[answerKey{"UpdateItem", answerThrottled}] = tc.t.throttled
			tl.answers[answerKey{"TransactWriteItems", answerConflict}] = tc.t.conflicts
			for op, n := range tc.t.forwarded {
				tl.answers[answerKey{op, answerOK}] = n
			}
			h := hotRun{envs: 8, wall: 10 * time.Second, tally: tl}
			if got := h.capped(rate, 333); !strings.HasPrefix(got, tc.want) {
				t.Errorf("expect %q…, got %q", tc.want, got)
			}
		})
	}
}

// TestHotTargets: the default path's contention failures at 8
// environments, each recommended line against the best lock line its
// source can run, and exactness.
func TestHotTargets(t *testing.T) {
	run := func(envs int, wall time.Duration, calls int, contention int) hotRun {
		return hotRun{envs: envs, accounts: 1, messages: 100, wall: wall, calls: calls, failed: contention, causes: map[string]int{causeContention: contention}}
	}
	// Each case's runs at 8 and 64 environments: the lock per message
	// 100 and 5 credits/s at 3 calls; the lock's batches 50 and 20; the
	// queue's entries 25 at 64.
	result := func(kit8, agg8, aggSQS8 hotRun) *hotResult {
		return &hotResult{cfg: hotConfig{envs: []int{8, 64}, accounts: []int{1}}, lines: []string{hotProcess, hotAggregate, hotAggregateSQS, hotLock, hotLockSQS},
			runs: [][]hotRun{
				{kit8, run(64, 10*time.Second, 100, 0)},
				{agg8, run(64, 10*time.Second, 101, 0)},
				{aggSQS8, run(64, 4*time.Second, 20, 0)},
				{run(8, time.Second, 300, 0), run(64, 20*time.Second, 300, 0)},
				{run(8, 2*time.Second, 300, 0), run(64, 5*time.Second, 300, 0)}}}
	}
	// want: the default path; the queue's line at 8, 64 (against the
	// batches' lock at 64); the per-message line at 8, 64; exactness.
	for _, tc := range []struct {
		name                string
		kit8, agg8, aggSQS8 hotRun
		want                []bool
	}{
		{"met", run(8, time.Second, 100, 0), run(8, time.Second, 101, 0), run(8, time.Second/2, 20, 0), []bool{true, true, true, true, true, true}},
		{"contention; the per-message entries slower", run(8, 2*time.Second, 400, 3), run(8, 2*time.Second, 101, 0), run(8, time.Second/2, 20, 0), []bool{false, true, true, false, true, true}},
		{"the queue's entries as fast as the lock, at more calls", run(8, time.Second, 100, 0), run(8, time.Second, 101, 0), run(8, time.Second, 301, 0), []bool{true, false, true, true, true, true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := (report{hot: result(tc.kit8, tc.agg8, tc.aggSQS8)}).hotTargets()
			if len(got) != len(tc.want) {
				t.Fatalf("expect %d targets, got %+v", len(tc.want), got)
			}
			for i, tg := range got {
				if tg.met != tc.want[i] {
					t.Errorf("%s (%s): expect met %v, got %v", tg.what, tg.measured, tc.want[i], tg.met)
				}
			}
		})
	}
	x := result(run(8, time.Second, 100, 0), run(8, time.Second, 101, 0), run(8, time.Second/2, 20, 0))
	x.runs[4][1].wall = 2 * time.Second // the lock's batches at 64: 50 credits/s, above the queue's entries' 25 and the lock per message's 5
	if got := (report{hot: x}).hotTargets(); got[2].met {
		t.Errorf("the lock's batches faster than the queue's entries at 64: expect that target missed, got %+v", got[2])
	}
	x.runs[0][1].lost = 1
	if got := (report{hot: x}).hotTargets(); got[len(got)-1].met {
		t.Errorf("a lost credit: expect the exactness target missed, got %+v", got[len(got)-1])
	}
}

// TestHotRun: a small section on the local server, every Go line, with a
// fast model: each line credits every account exactly, counts its calls
// (the lock 3 a credit, never failing: its writes are single), and the
// model tallies its answers and the section's report writes a row per
// line and count.
func TestHotRun(t *testing.T) {
	m, err := parseModel("fast", []byte(`{"source": "test", "figures": [
		{"operation": "PutItem", "p50Ms": 2, "p99Ms": 4},
		{"operation": "TransactWriteItems", "items": 2, "p50Ms": 6, "p99Ms": 12}]}`))
	if err != nil {
		t.Fatal(err)
	}
	cfg := hotConfig{messages: 20, envs: []int{1, 3}, accounts: []int{1, 2}, scale: 1, deadline: hotDeadline, lines: hotLines, rateFor: 100 * time.Millisecond}
	res, err := runHot(context.Background(), idemtest.Endpoint(t), m, 1, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.runs) != len(hotLines) || res.rate.singles <= 0 || res.rate.txs <= 0 {
		t.Fatalf("expect a run list per line and the local server's rate, got %d and %+v", len(res.runs), res.rate)
	}
	for k, l := range hotLines {
		for i, h := range res.runs[k] {
			envs, accounts := res.config(i)
			t.Run(fmt.Sprintf("%s/%d environments/%d accounts", l.name, envs, accounts), func(t *testing.T) {
				if h.doubles != 0 || h.lost != 0 || len(h.credit) != cfg.messages {
					t.Errorf("expect 0 double, 0 lost and %d credits timed; got %d, %d, %d", cfg.messages, h.doubles, h.lost, len(h.credit))
				}
				forwarded := 0
				for _, n := range h.tally.forwarded {
					forwarded += n
				}
				if h.calls == 0 || forwarded == 0 {
					t.Errorf("expect calls counted and the model's tally, got %d calls and %d forwarded", h.calls, forwarded)
				}
				if strings.HasPrefix(l.name, "Go two-phase lock") && (h.calls != 3*cfg.messages || h.failed != 0) {
					t.Errorf("the lock: expect 3 calls a credit and no failure, got %d calls and %d failed", h.calls, h.failed)
				}
			})
		}
	}
	var md strings.Builder
	(report{hot: res}).hotSection(func(f string, a ...any) { fmt.Fprintf(&md, f, a...) })
	if rows := strings.Count(md.String(), "\n| "); rows != 1+len(hotLines)*len(cfg.envs)*len(cfg.accounts) {
		t.Errorf("expect a header and a row per line and count, got %d rows:\n%s", rows, md.String())
	}
}
