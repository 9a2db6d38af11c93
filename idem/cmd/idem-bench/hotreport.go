package main

// The hot-item section's report: its table, one row per line ×
// environments × accounts, how it was measured, and its targets.

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// hotRecommended are the lines the guide recommends for a hot item, by
// how its source delivers: a queue's batches, or one message a delivery
// (a webhook). The targets hold each to the best of the Go two-phase
// lock's lines its source can run at the same environments.
var hotRecommended = []struct {
	source, line string
	locks        []string
}{
	{"a queue", hotAggregateSQS, []string{hotLock, hotLockSQS}},
	{"one message a delivery", hotAggregate, []string{hotLock}},
}

// The thresholds at which a run counts as capped by the local server, the
// partition limit, or the model's conflicts (hotRun.capped).
const (
	capLate      = 0.5 // of the requests forwarded, answered by the local server well after their drawn time
	capLocalLoad = 0.7 // of the local server's measured rate
	capPartition = 0.8 // of a partition's units a second
	capHeld      = 0.8 // of the run, the hottest item held by transactions
	capRefused   = 0.2 // of the run's requests, refused for meeting a held item
)

// capped says what set a run's pace: the local server, when it answered
// capLate of the requests forwarded to it well after their drawn time, or
// they used capLocalLoad of its measured rate; else the model's partition
// limit, when a request was throttled or the busiest partition spent
// capPartition of its units; else the model's conflicts, when requests
// met held items and transactions held the hottest item capHeld of the
// run (one transaction at a time), or capRefused of the requests were
// refused (the conflicts and the backoff after them); else the
// environments, each waiting on its own calls.
func (h hotRun) capped(rate localRate, limit float64) string {
	held, units := h.tally.hottest()
	throttled, refused, requests := 0, 0, 0
	for k, n := range h.tally.answers {
		requests += n
		switch k.kind {
		case answerThrottled:
			throttled += n
		case answerConflict:
			refused += n
		}
	}
	wall := max(h.wall.Seconds(), 1e-9)
	late, load := h.tally.lateShare(), rate.load(h.tally, h.wall)
	switch {
	case late >= capLate || load >= capLocalLoad:
		return fmt.Sprintf("the local server (%.0f%% of its answers well after the model's time; %.0f%% of its measured rate)", 100*late, 100*load)
	case throttled > 0 || units/wall >= capPartition*limit:
		return fmt.Sprintf("the model's partition limit (%d throttled; the busiest partition %.0f units/s of %.0f)", throttled, units/wall, limit)
	case refused > 0 && held.Seconds()/wall >= capHeld:
		return fmt.Sprintf("the model's conflicts: one transaction at a time on the account (held %.0f%% of the run; %d of %d requests refused)", 100*held.Seconds()/wall, refused, requests)
	case float64(refused) >= capRefused*float64(requests) && refused > 0:
		return fmt.Sprintf("the model's conflicts and the backoff after them (the busiest account held %.0f%% of the run; %d of %d requests refused)", 100*held.Seconds()/wall, refused, requests)
	}
	return fmt.Sprintf("the environments (%d, each waiting on its calls)", h.envs)
}

// causes writes a run's failed deliveries with their causes: "147
// (contention 140, in flight 7)".
func (h hotRun) causesText() string {
	if h.failed == 0 {
		return "0"
	}
	var parts []string
	told := 0
	for _, c := range []string{causeContention, causeThrottling, causeDeadline, causeInFlight, causeOther} {
		if n := h.causes[c]; n > 0 {
			parts = append(parts, fmt.Sprintf("%s %d", c, n))
			told += n
		}
	}
	if told < h.failed {
		parts = append(parts, fmt.Sprintf("not told %d", h.failed-told))
	}
	return fmt.Sprintf("%d (%s)", h.failed, strings.Join(parts, ", "))
}

func (r report) hotSection(p func(string, ...any)) {
	x := r.hot
	if x == nil {
		return
	}
	p("## Hot items: one account, or ten, credited by many environments at once\n\n")
	if x.skipped != "" {
		p("Not run: %s.\n\n", x.skipped)
		return
	}
	c := x.cfg
	p("%d messages a run, each crediting 1 cent, spread evenly over the accounts. Each of N environments has its own `Store` (or lock, or Powertools persistence layer), SDK client and state, as separate Lambda environments have; all take messages from one in-memory queue, one at a time or in batches of 10 as the line says. ", c.messages)
	p("A delivery (or record) that fails is delivered again at once, ahead of the messages not yet received, as the issue measured (no visibility timeout), with its receive count one more (the SQS lines' `ApproximateReceiveCount`), and counts as a delivery failed to the sender. ")
	p("Each delivery has a deadline of %v on its context, as a Lambda invoke's timeout gives (Powertools is told the time remaining and is not cut off). ", c.deadline)
	p("Every request goes through the latency model with its latencies ×%g (%s), so that the model, not the local server (one request at a time), sets the pace; the partition limit is divided by as much, so that a figure the model capped is DynamoDB's divided by %g. ", c.scale, x.model, c.scale)
	p("The model answers as DynamoDB documents for writes that meet on one item (conflicts.go): a `TransactWriteItems` holds the items it writes from its arrival until its answer; a request meeting a held item is not forwarded, a transaction is answered `TransactionCanceledException` with `TransactionConflict` on the held items and `None` on the others, a `PutItem`, `UpdateItem` or `DeleteItem` `TransactionConflictException`, each after its own drawn latency; a `GetItem` is served (read-committed); single writes hold nothing. ")
	p("Each partition key value is a partition of its own with 1,000 write units a second (%.0f a second on the run's clock), at most one second's unspent: a transactional write costs 2 units per action, a single write 1; a write its partition cannot pay for is throttled (`ThrottlingException` with reason `TableWriteKeyRangeThroughputExceeded`, or `ThrottlingError` in a cancelled transaction; the SDK retries the first). ", x.limit)
	p("The local server, measured straight before the runs with %d clients at once: %.0f single writes a second, %.0f 2-action transactions a second. ", rateClients, x.rate.singles, x.rate.txs)
	p("Credits a second: the run's messages over the wall time from the first delivery to the last credit applied. A credit's time: from its message's first delivery to the end of the delivery that applied it. Calls per credit: every DynamoDB call the environments started, counted by an SDK middleware (a `Store`'s one `DescribeTable` left out; Powertools' counted by `bench.js`'s), retries of the SDK not counted again. ")
	p("Price per million credits, on-demand, from how the model answered each request: %s; $%.3f per million WRU, $%.3f per million RRU (%s). ", hotUnitRules, priceWRU, priceRRU, priceSource)
	p("Double and lost compare each account's balance with its messages, exactly. What capped a figure: the local server when it answered %.0f%% of the requests forwarded to it more than a quarter after their drawn time, or they used %.0f%% of its measured rate; else the model's partition limit when a request was throttled or a partition spent %.0f%% of its units; else the model's conflicts when requests met held items and transactions held the account %.0f%% of the run, or %.0f%% of the requests were refused (the conflicts and the backoff after them); else the environments, each waiting on its own calls (the Go lines' environments share this process's CPU, Powertools' one Node process's, on the machine's shared cores).\n\n", 100*capLate, 100*capLocalLoad, 100*capPartition, 100*capHeld, 100*capRefused)
	if x.ptSkipped != "" {
		p("Powertools did not run: %s.\n\n", x.ptSkipped)
	} else if x.ptVersion != "" {
		p("Powertools: `@aws-lambda-powertools/idempotency` %s, `bench.js`'s hot mode.\n\n", x.ptVersion)
	}
	p("The entries lines (`%s`; `%s`) make a credit when its entry commits with its claim (their credits a second and a credit's time are the entries'); a run's consumer of the entries table's stream, `stream.Aggregate` on a `Store` of its own through the same model (its calls counted with the line's), folds them into the balance, and the delay that adds, from an entry's commit to its fold (the emulated event source mapping polls every %v of the run's clock, batches of up to %d records), is its own column; the run ends once the balance holds every credit, which double / lost checks.\n\n", hotAggregate, hotAggregateSQS, time.Duration(float64(foldPoll)*c.scale), foldBatch)
	p("| line | environments | accounts | credits/s | calls per credit | $ per million credits | deliveries failed to the sender | credit p50 ms | credit p99 ms | stream delay p50 / p99 ms | double / lost | what capped it |\n|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	for k, name := range x.lines {
		for i, h := range x.runs[k] {
			envs, accounts := x.config(i)
			lag := "—"
			if len(h.lag) > 0 {
				lag = ms(percentile(h.lag, 0.5)) + " / " + ms(percentile(h.lag, 0.99))
			}
			p("| %s | %d | %d | %.1f | %.2f | %s | %s | %s | %s | %s | %d / %d | %s |\n", name, envs, accounts, h.creditsPerSec(), h.callsPerCredit(),
				h.perCredit().dollars(), h.causesText(), ms(percentile(h.credit, 0.5)), ms(percentile(h.credit, 0.99)), lag, h.doubles, h.lost, h.capped(x.rate, x.limit))
		}
	}
	p("\n")
}

// run is line name's run at (envs, accounts), or nil.
func (x *hotResult) run(name string, envs, accounts int) *hotRun {
	k := slices.Index(x.lines, name)
	if k < 0 {
		return nil
	}
	for i := range x.runs[k] {
		if e, a := x.config(i); e == envs && a == accounts {
			return &x.runs[k][i]
		}
	}
	return nil
}

// hotTargets are issue 34's, on one run of the section: at 8
// environments on one account this kit's default path fails no delivery
// for contention; each recommended line makes at least the credits a
// second of the best lock line its source can run, at no more calls per
// credit, at 8 environments, and at least its credits a second at 64;
// and nothing double or lost.
func (r report) hotTargets() []target {
	x := r.hot
	if x == nil || x.skipped != "" {
		return nil
	}
	var out []target
	if h := x.run(hotProcess, 8, 1); h != nil {
		out = append(out, target{"hot item, 8 environments on one account: this kit's default path fails 0 deliveries for contention",
			fmt.Sprintf("%d for contention; in all %s, for %d messages", h.causes[causeContention], h.causesText(), h.messages), h.causes[causeContention] == 0})
	}
	for _, r := range hotRecommended {
		for _, envs := range []int{8, 64} {
			what := fmt.Sprintf("hot item, %s, %d environments on one account: %s ≥ the Go two-phase lock's best line's credits/s", r.source, envs, r.line)
			if envs == 8 {
				what += " at no more calls per credit than it"
			}
			var lock *hotRun
			lockName := ""
			for _, name := range r.locks {
				if h := x.run(name, envs, 1); h != nil && (lock == nil || h.creditsPerSec() > lock.creditsPerSec()) {
					lock, lockName = h, name
				}
			}
			rec := x.run(r.line, envs, 1)
			switch {
			case lock == nil:
				continue // no lock line ran at this count
			case rec == nil:
				out = append(out, target{what, "the line did not run", false})
			default:
				met := rec.creditsPerSec() >= lock.creditsPerSec() && (envs != 8 || rec.callsPerCredit() <= lock.callsPerCredit())
				out = append(out, target{what, fmt.Sprintf("%.1f against %.1f credits/s (%s), %.2f against %.2f calls per credit",
					rec.creditsPerSec(), lock.creditsPerSec(), lockName, rec.callsPerCredit(), lock.callsPerCredit()), met})
			}
		}
	}
	doubles, lost, runs := 0, 0, 0
	for k := range x.runs {
		for _, h := range x.runs[k] {
			doubles, lost, runs = doubles+h.doubles, lost+h.lost, runs+1
		}
	}
	out = append(out, target{"hot items: 0 double and 0 lost credits, every line", fmt.Sprintf("%d double, %d lost over %d runs", doubles, lost, runs), doubles == 0 && lost == 0})
	return out
}
