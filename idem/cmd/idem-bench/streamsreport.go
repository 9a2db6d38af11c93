package main

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// On-demand prices in us-east-1 (standard table class), dollars per
// million request units, since DynamoDB's on-demand price cut of 1
// November 2024. Not read from AWS here: AWS's page renders its figures in
// the browser; these are as quoted by a dated third-party page, named in
// priceSource, which the report prints beside them.
const (
	priceWRU    = 0.625
	priceRRU    = 0.125
	priceSource = "us-east-1 on-demand, standard table class, after the price cut of 1 November 2024, as quoted by airbyte.com's \"Amazon DynamoDB Pricing\" (21 July 2025); AWS's own page is aws.amazon.com/dynamodb/pricing/on-demand/, where to check them before quoting"
)

// modelIndex is the model's server index, or -1 when it did not run.
func (r report) modelIndex() int {
	if len(r.servers) < 2 {
		return -1
	}
	return 1
}

// ptStats is Powertools' figures for stream s on server j, or nil.
func (x *streamsResult) ptStats(s, j int) *streamStats {
	if x.pt == nil || x.pt.skipped != "" || j < 0 {
		return nil
	}
	return &x.pt.stats[s][j]
}

// streamsSection writes the rare and storm streams' tables, the sweep's,
// and what a duplicate costs in request units.
func (r report) streamsSection(p func(string, ...any)) {
	x := r.streams
	if x != nil {
		r.streamsTables(p)
	}
	r.sweepSection(p)
	if x != nil {
		r.moneySection(p)
	}
}

func (r report) streamsTables(p func(string, ...any)) {
	x := r.streams
	p("## Duplicates in numbers: rare, and a redelivery storm\n\n")
	p("Two streams, each played one delivery at a time in one order by every strategy (the order is drawn from `-seed`):")
	for _, st := range x.streams {
		p(" **%s**, %s;", st.name, st.what)
	}
	p(" %d timed messages each, after %d warm-up messages delivered the same way and not timed, so that this kit's share of the sender's recent duplicates, a moving average over about 16 deliveries that `ReadFirstAbove` is compared with, has settled before the timing starts (within 0.006 of its value in the rare stream, 0.2%% in the storm). With receive counts the share is kept apart for first receives, which settle so, and for redeliveries: the rare stream's warm-up holds about 2 of those where 6 lift their share past `ReadFirstAbove`, so some of its timed duplicates still pay a transaction (its calls per duplicate below). ", x.streams[0].messages, streamWarm)
	p("Each strategy keeps its own tables on each server and begins each stream with a new `Store`; for each delivery the Go strategies take turns, each on every server in turn. This kit goes through the SQS adapter per record, as the queue function runs it. ")
	p("Powertools for TypeScript plays the same order through `bench.js` with its default configuration (`useLocalCache: false`) on the same servers, after the Go strategies (another process: it takes no turns with them). ")
	p("The floor is the issue's: one 2-action `TransactWriteItems` per first delivery and one `GetItem` per duplicate, no idempotency code. The mean column is (first + duplicate) / 2, at p50 and at p99.\n\n")
	if x.pt != nil && x.pt.skipped != "" {
		p("Powertools did not run: %s.\n\n", x.pt.skipped)
	}
	if r.modelIndex() < 0 || x.pt == nil || x.pt.skipped != "" {
		p("The issue's latency targets, judged on the model against Powertools, are not judged in this run: it has no model or no Powertools.\n\n")
	}
	head, rule := r.latencyHeader("first p50 ms", "first p99 ms", "dup p50 ms", "dup p99 ms", "mean p50 ms", "mean p99 ms")
	type line struct {
		name  string
		stats func(s, j int) *streamStats
	}
	var lines []line
	for k, l := range x.lines {
		lines = append(lines, line{l.name, func(s, j int) *streamStats { return &x.stats[s][k][j] }})
	}
	if x.pt != nil && x.pt.skipped == "" {
		lines = append(lines, line{"Powertools for TypeScript, `useLocalCache: false` (its default)", x.ptStats})
	}
	for s, st := range x.streams {
		firsts, dups := st.timed()
		p("### %s: %d first deliveries and %d duplicates timed\n\n| strategy | %s\n|---|%s\n", st.name, firsts, dups, head, rule)
		for _, l := range lines {
			p("| %s | %s |\n", l.name, sideBySide(6, len(r.servers), func(f, j int) string {
				st := l.stats(s, j)
				f50, d50, m50 := st.p(0.5)
				f99, d99, m99 := st.p(0.99)
				return ms([]time.Duration{f50, f99, d50, d99, m50, m99}[f])
			}))
		}
		p("\n")
	}
	p("Calls per delivery by operation (the local server's; the model changes none), and the messages credited more than once on any server, the warm-up's included:\n\n| stream | strategy | per first delivery | per duplicate | double effects |\n|---|---|---|---|---|\n")
	for s, st := range x.streams {
		firsts, dups := st.timed()
		for _, l := range lines {
			doubles := 0
			for j := range r.servers {
				doubles += l.stats(s, j).doubles
			}
			local := l.stats(s, 0)
			p("| %s | %s | %s | %s | %d of %d |\n", st.name, l.name, ops(perDelivery(local.opsFirst, firsts)), ops(perDelivery(local.opsDup, dups)), doubles, (st.warm+st.messages)*len(r.servers))
		}
	}
	p("\n")
	if j := r.modelIndex(); j >= 0 {
		storm := len(x.streams) - 1
		floor := &x.stats[storm][len(x.lines)-1][j]
		_, fdup, _ := floor.p(0.5)
		p("On the model a read before the transaction is what spares this kit's duplicates a cancelled transaction; when the records carry SQS's receive count only the redeliveries make it, and a first receive goes straight to its transaction, while a sender that counts nothing makes every delivery of the storm read first, first deliveries included. ")
		if pt := x.ptStats(storm, j); pt != nil {
			_, pdup, _ := pt.p(0.5)
			p("A client's own time comes on top of the model's draws: Powertools' duplicate (one `PutItem`) took %s ms at p50 where the floor's (one `GetItem`, drawn from the same figures) took %s ms, so Node's client adds about %s ms per call over Go's on this machine. ", ms(pdup), ms(fdup), ms(pdup-fdup))
		}
		p("An eventually consistent read misses a claim written just before it about 0.5%% of the time on DynamoDB (FACTS); the local server never does, so here every read after a first delivery finds its claim.\n\n")
	}
}

// sweepSection writes the ReadFirstAbove sweep and which value it
// favours.
func (r report) sweepSection(p func(string, ...any)) {
	w := r.sweep
	if w == nil {
		return
	}
	p("### ReadFirstAbove, swept on the model\n\n")
	if w.skipped != "" {
		p("Not run: %s.\n\n", w.skipped)
		return
	}
	p("This kit with the library's default `ReadFirstAbove` (%s, left unset) and with each of %s, one `Store` and its own tables each, taking turns for each delivery, on the %s alone, the records without receive counts (where the threshold alone decides); %d timed messages per stream after %d to warm up, in streams where 5%%, 20%%, 40%% and 50%% of the deliveries are duplicates (built as the streams above: a message's duplicate 1 to 9 messages after it). ",
		defaultReadFirstAbove, strings.Join(w.values[1:], ", "), w.server.name, w.n, streamWarm)
	p("Each cell: the measured mean of every timed delivery / the model's expectation from the calls made (each `GetItem` at its distribution's mean, each transaction at a committed or cancelled 2-action transaction's), in ms, and `GetItem`s per delivery. The expectation has no draw's luck in it, so it separates values the measured mean's noise may not.\n\n")
	p("| ReadFirstAbove |")
	for _, st := range w.streams {
		p(" %s: measured / expected ms, reads |", st.name)
	}
	p("\n|---|%s\n", strings.Repeat("---|", len(w.streams)))
	name := func(k int) string {
		if w.values[k] == "" {
			return defaultReadFirstAbove + ", the library's default (left unset)"
		}
		return w.values[k]
	}
	for k := range w.values {
		p("| %s |", name(k))
		for s := range w.streams {
			ss := w.stats[s][k]
			reads := float64(ss.opsFirst["GetItem"]+ss.opsDup["GetItem"]) / float64(max(len(ss.first)+len(ss.dup), 1))
			p(" %.2f / %.2f, %.2f |", ss.meanMs(), expectedMs(r.model, ss), reads)
		}
		p("\n")
	}
	p("\n")
	defaultBest := true
	var notes []string
	for s, st := range w.streams {
		exp := make([]float64, len(w.values))
		meas := make([]float64, len(w.values))
		for k := range w.values {
			exp[k], meas[k] = expectedMs(r.model, w.stats[s][k]), w.stats[s][k].meanMs()
		}
		best := slices.Min(exp)
		var tied []string
		for k, e := range exp {
			if e <= best*1.01 {
				tied = append(tied, name(k))
			}
		}
		if exp[0] > best*1.01 {
			defaultBest = false
		}
		notes = append(notes, fmt.Sprintf("%s: lowest expectation %s (within 1%%), lowest measured mean %s", st.name, strings.Join(tied, ", "), name(slices.Index(meas, slices.Min(meas)))))
	}
	p("%s. ", strings.Join(notes, "; "))
	if defaultBest {
		p("By the model's expectation the library's default is the lowest, or within 1%% of it, on every stream: it is the value to keep.\n\n")
	} else {
		p("By the model's expectation the library's default is **not** the lowest on every stream: see the streams above where another value is.\n\n")
	}
}

// ruCost is a delivery's documented request units, from the calls it
// made: each GetItem (eventually consistent, under 4 KB) 0.5 RRU, each
// single-item write (under 1 KB) 1 WRU, a committed 2-action transaction
// 4 WRU, a cancelled one 2 to 4 WRU (the documentation does not say).
type ruCost struct{ rru, wruLow, wruHigh float64 }

func ruOf(ops map[string]float64, dup bool) ruCost {
	c := ruCost{rru: 0.5 * ops["GetItem"]}
	single := ops["PutItem"] + ops["UpdateItem"] + ops["DeleteItem"]
	c.wruLow, c.wruHigh = single, single
	if tx := ops["TransactWriteItems"]; dup {
		c.wruLow += 2 * tx
		c.wruHigh += 4 * tx
	} else {
		c.wruLow += 4 * tx
		c.wruHigh += 4 * tx
	}
	return c
}

func (c ruCost) plus(d ruCost, times float64) ruCost {
	return ruCost{c.rru + times*d.rru, c.wruLow + times*d.wruLow, c.wruHigh + times*d.wruHigh}
}

func (c ruCost) String() string {
	w := fmt.Sprintf("%.1f", c.wruLow)
	if c.wruHigh != c.wruLow {
		w = fmt.Sprintf("%.1f to %.1f", c.wruLow, c.wruHigh)
	}
	return fmt.Sprintf("%s WRU + %.2f RRU", w, c.rru)
}

// dollars is c's price per million, a range when c is.
func (c ruCost) dollars() string {
	lo, hi := c.wruLow*priceWRU+c.rru*priceRRU, c.wruHigh*priceWRU+c.rru*priceRRU
	if lo == hi {
		return fmt.Sprintf("$%.2f", lo)
	}
	return fmt.Sprintf("$%.2f to $%.2f", lo, hi)
}

// moneySection says what a duplicate costs in request units and dollars,
// by DynamoDB's documentation, from the storm's counted calls.
func (r report) moneySection(p func(string, ...any)) {
	x := r.streams
	p("### What a duplicate costs in request units\n\n")
	p("Not measured (the local server reports no capacity): DynamoDB's documented units, for claims and records under 1 KB, applied to the calls counted in the storm. ")
	p("This kit's duplicate above `ReadFirstAbove` is one eventually consistent `GetItem` of an item under 4 KB: 0.5 read request unit (RRU). ")
	p("Below it, or with `-1`, one 2-action `TransactWriteItems` cancelled by its claim's condition. The developer guide says that DynamoDB \"performs two underlying reads or writes of every item in the transaction: one to prepare the transaction and one to commit the transaction\" (transaction-apis, \"Capacity management for transactions\"), and that when a condition \"evaluates to false during a conditional write, DynamoDB still consumes write capacity from the table\": one WCU when the item does not exist, otherwise by its size (WorkingWithItems, \"Capacity units consumed by conditional writes\"). ")
	p("It does not say what a cancelled transaction consumes, and a cancelled transaction's response carries no `ConsumedCapacity` to read it from (observed on DynamoDB by paritysuite/dynamodb-conformance, pull request 67, June 2026); so it is given as a range, from 1 write request unit (WRU) per item, a failed conditional write's, to 2 per item, a committed transaction's: 2 to 4 WRU for 2 actions. ")
	p("Powertools' duplicate is a conditional `PutItem` that fails on an existing record under 1 KB: 1 WRU. A committed 2-action transaction is 4 WRU; a single-item write 1 WRU. ")
	p("Prices: $%.3f per million WRU and $%.3f per million RRU, %s.\n\n", priceWRU, priceRRU, priceSource)
	storm := len(x.streams) - 1
	firsts, dups := x.streams[storm].timed()
	perMsg := float64(dups) / float64(firsts)
	p("| storm, by its counted calls | a first delivery | a duplicate | a message (first + %.0f duplicates) | per million messages |\n|---|---|---|---|---|\n", perMsg)
	row := func(name string, st *streamStats) {
		f := ruOf(perDelivery(st.opsFirst, firsts), false)
		d := ruOf(perDelivery(st.opsDup, dups), true)
		m := f.plus(d, perMsg)
		p("| %s | %s | %s | %s | %s |\n", name, f, d, m, m.dollars())
	}
	for k, l := range x.lines {
		if l.kit {
			row(l.name, &x.stats[storm][k][0])
		}
	}
	if pt := x.ptStats(storm, 0); pt != nil {
		row("Powertools for TypeScript, `useLocalCache: false` (its default)", pt)
	}
	p("\n")
}

// firstAndMean are st's first-delivery and mean figures, at p50 and p99.
func firstAndMean(st *streamStats) (first50, mean50, first99, mean99 time.Duration) {
	first50, _, mean50 = st.p(0.5)
	first99, _, mean99 = st.p(0.99)
	return first50, mean50, first99, mean99
}

// streamsTargets are issue 18's targets on the model, with the p99
// figures and the floor beside them, and 0 double effects for this kit
// everywhere it ran.
func (r report) streamsTargets() []target {
	x := r.streams
	if x == nil {
		return nil
	}
	var out []target
	j := r.modelIndex()
	rare, storm := 0, len(x.streams)-1
	kitOf := func(s int) *streamStats { return &x.stats[s][0][j] }
	floorOf := func(s int) *streamStats { return &x.stats[s][len(x.lines)-1][j] }
	if pt := x.ptStats(rare, j); pt != nil {
		kf, _, k99, _ := firstAndMean(kitOf(rare))
		pf, _, p99, _ := firstAndMean(pt)
		ff, _, ff99, _ := firstAndMean(floorOf(rare))
		out = append(out, target{"rare duplicates: this kit's first-delivery p50 ≤ Powertools', on the model",
			fmt.Sprintf("%s ms against %s (p99 %s against %s; floor %s, p99 %s)", ms(kf), ms(pf), ms(k99), ms(p99), ms(ff), ms(ff99)), kf <= pf})
		// The storm's targets for this kit where SQS counts receives (line
		// 0), and where no sender counts (line 1: a provider's resends).
		for line, who := range []string{"SQS's receive counts", "no receive counts"} {
			kf, km, k99, km99 := firstAndMean(&x.stats[storm][line][j])
			pf, pm, p99, pm99 := firstAndMean(x.ptStats(storm, j))
			ff, fm, ff99, fm99 := firstAndMean(floorOf(storm))
			limit := time.Duration(1.1 * float64(pf))
			out = append(out,
				target{"storm, " + who + ": this kit's first-delivery p50 ≤ 1.1× Powertools', on the model",
					fmt.Sprintf("%s ms against 1.1 × %s = %s (p99 %s against %s; floor %s, p99 %s)", ms(kf), ms(pf), ms(limit), ms(k99), ms(p99), ms(ff), ms(ff99)), kf <= limit},
				target{"storm, " + who + ": mean of this kit's first-delivery and duplicate p50s ≤ Powertools', on the model",
					fmt.Sprintf("%s ms against %s (the same mean at p99: %s against %s; floor %s, p99 %s)", ms(km), ms(pm), ms(km99), ms(pm99), ms(fm), ms(fm99)), km <= pm})
		}
	}
	doubles, deliveries := 0, 0
	var where []string
	for s, st := range x.streams {
		for k, l := range x.lines {
			if !l.kit {
				continue
			}
			for j := range r.servers {
				doubles += x.stats[s][k][j].doubles
				deliveries += st.warm + st.messages
			}
		}
	}
	where = append(where, fmt.Sprintf("%d in the streams (%d messages, every line of this kit, every server)", doubles, deliveries))
	if c := r.coalesce; c != nil {
		d := 0
		for _, w := range c.rows {
			d += w.doubles
		}
		doubles += d
		where = append(where, fmt.Sprintf("%d coalescing (%d messages × %d servers)", d, c.n, len(c.rows)))
	}
	if kits := r.kitRows(); len(kits) > 0 {
		d := 0
		for _, k := range kits {
			d += k.crashDoubles + k.raceDoubles
		}
		doubles += d
		where = append(where, fmt.Sprintf("%d in the strategies' crash and race columns", d))
	} else {
		where = append(where, "the strategies' crash and race columns not run")
	}
	out = append(out, target{"0 double effects for this kit everywhere", strings.Join(where, "; "), doubles == 0})
	return out
}

// floorLine states the floor beside the targets: what one transaction
// per first delivery and one read per duplicate took on the model.
func (r report) floorLine(p func(string, ...any)) {
	x, j := r.streams, r.modelIndex()
	if x == nil || j < 0 {
		return
	}
	for s, st := range x.streams {
		f := &x.stats[s][len(x.lines)-1][j]
		f50, d50, m50 := f.p(0.5)
		f99, d99, m99 := f.p(0.99)
		p("\nThe floor on the model, %s stream, same run: one 2-action `TransactWriteItems` per first delivery, p50 %s ms (p99 %s); one `GetItem` per duplicate, p50 %s ms (p99 %s); their mean %s ms (p99 %s).\n", st.name, ms(f50), ms(f99), ms(d50), ms(d99), ms(m50), ms(m99))
	}
}
