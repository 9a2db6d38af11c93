package main

import (
	"fmt"
	"strings"
	"time"
)

// modelIndex is the model's server index, or -1 when it did not run.
func (r report) modelIndex() int {
	if len(r.servers) < 2 {
		return -1
	}
	return 1
}

// countIndex is the server whose calls the section counts: the model's,
// where a read and a transaction race as they would on DynamoDB's
// published latencies, so that what became of a transaction the kit
// called off is as it would be there; the local server's without it.
func (r report) countIndex() int {
	return max(r.modelIndex(), 0)
}

// ptStats is Powertools' figures for stream s on server j, or nil.
func (x *streamsResult) ptStats(s, j int) *streamStats {
	if x.pt == nil || x.pt.skipped != "" || j < 0 {
		return nil
	}
	return &x.pt.stats[s][j]
}

// ptName is Powertools' line in the section's tables.
const ptName = "Powertools for TypeScript, `useLocalCache: false` (its default)"

// statsLine is one line of the section's tables: its figures for stream
// s on server j.
type statsLine struct {
	name  string
	floor bool
	stats func(s, j int) *streamStats
}

// statsLines are the Go lines, then Powertools' when it ran.
func (x *streamsResult) statsLines() []statsLine {
	var lines []statsLine
	for k, l := range x.lines {
		lines = append(lines, statsLine{l.name, k == lineFloor, func(s, j int) *streamStats { return &x.stats[s][k][j] }})
	}
	if x.pt != nil && x.pt.skipped == "" {
		lines = append(lines, statsLine{ptName, false, x.ptStats})
	}
	return lines
}

// streamsSection writes the streams' tables, the sweep's, and what a
// message costs in request units.
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
	p("## Duplicates in numbers: rare, a storm counted and not, every message twice\n\n")
	p("%d streams, each played one delivery at a time in one order by every strategy (the orders are drawn from `-seed`):", len(x.streams))
	for _, st := range x.streams {
		p(" **%s**, %s;", st.name, st.what)
	}
	p(" %d timed messages each, after %d warm-up messages delivered the same way and not timed, so that this kit's share of the sender's recent duplicates, a moving average over about 16 deliveries that `ReadFirstAbove` is compared with, has settled before the timing starts (within 0.006 of its value in the rare stream, 0.2%% in the others). ", x.streams[0].messages, streamWarm)
	p("Each strategy keeps its own tables on each server and begins each stream with a new `Store`; for each delivery the Go strategies take turns, each on every server in turn. ")
	p("This kit receives each stream as the stream says: through the SQS adapter per record, as the queue function runs it, or through `Store.Process` called directly. A delivery reads its claim (`GetItem`) before its handler and its transaction when deliveries like it have lately been mostly duplicates (`ReadFirstAbove`, 0.3 by default: a key this environment settled before, a redelivery the sender counts, or the sender's other deliveries), and then sends no transaction when the read finds the claim; otherwise it goes straight to its transaction, whose claim's condition answers a duplicate. Never both for a duplicate. Each stream here runs through one environment, so every duplicate reaches the environment that settled its key; `ReadFirstAbove -1` never reads. ")
	p("The Go two-phase lock is the lock-then-complete algorithm of Powertools and its Go port, in Go on the same client (a conditional `PutItem` IN_PROGRESS, the credit, an `UpdateItem` COMPLETED; a duplicate is the `PutItem` failing, its old record returned); it counts no deliveries, so the counted and the uncounted storm are alike to it. ")
	p("Powertools for TypeScript plays the same orders through `bench.js` with its default configuration (`useLocalCache: false`) on the same servers, after the Go strategies (another process: it takes no turns with them). ")
	p("The floor is issue 18's: one 2-action `TransactWriteItems` per first delivery and one `GetItem` per duplicate, no idempotency code. The mean column is (first + duplicate) / 2, at p50 and at p99. ")
	p("Latency claims rest on the model's columns alone: the local server prices a transaction about like a single write (its column is there to show it).\n\n")
	if x.pt != nil && x.pt.skipped != "" {
		p("Powertools did not run: %s.\n\n", x.pt.skipped)
	}
	if r.modelIndex() < 0 {
		p("The latency targets, judged on the model, are not judged in this run: it has no model.\n\n")
	}
	head, rule := r.latencyHeader("first p50 ms", "first p99 ms", "dup p50 ms", "dup p99 ms", "mean p50 ms", "mean p99 ms")
	lines := x.statsLines()
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
	j := r.countIndex()
	p("Calls per delivery by operation, as started, on the %s (where a read and a transaction race, this kit's calls depend on the server), and the messages credited more than once on any server, the warm-up's included:\n\n| stream | strategy | per first delivery | per duplicate | double effects |\n|---|---|---|---|---|\n", r.servers[j].name)
	for s, st := range x.streams {
		firsts, dups := st.timed()
		for _, l := range lines {
			doubles := 0
			for jj := range r.servers {
				doubles += l.stats(s, jj).doubles
			}
			c := l.stats(s, j)
			p("| %s | %s | %s | %s | %d of %d |\n", st.name, l.name, ops(perDelivery(c.opsFirst, firsts)), ops(perDelivery(c.opsDup, dups)), doubles, (st.warm+st.messages)*len(r.servers))
		}
	}
	p("\n")
	if j := r.modelIndex(); j >= 0 {
		s := 0 // the stream with the most duplicates timed, the first of them
		for i, st := range x.streams {
			if dupsOf(st) > dupsOf(x.streams[s]) {
				s = i
			}
		}
		floor := &x.stats[s][lineFloor][j]
		_, fdup, _ := floor.p(0.5)
		p("On the model a read beside the transaction is what spares this kit's duplicates a cancelled transaction's time; it does not spare them its units when the transaction was sent (the money table below). ")
		if pt := x.ptStats(s, j); pt != nil {
			_, pdup, _ := pt.p(0.5)
			p("A client's own time comes on top of the model's draws: in the %s stream Powertools' duplicate (one `PutItem`) took %s ms at p50 where the floor's (one `GetItem`, drawn from the same figures) took %s ms, so Node's client adds about %s ms per call over Go's on this machine. ", x.streams[s].name, ms(pdup), ms(fdup), ms(pdup-fdup))
		}
		p("An eventually consistent read misses a claim written just before it about 0.5%% of the time on DynamoDB (FACTS); the local server never does, so here every read after a first delivery finds its claim.\n\n")
	}
}

func dupsOf(st stream) int {
	_, d := st.timed()
	return d
}

// firstAndMean are st's first-delivery and mean figures, at p50 and p99.
func firstAndMean(st *streamStats) (first50, mean50, first99, mean99 time.Duration) {
	first50, _, mean50 = st.p(0.5)
	first99, _, mean99 = st.p(0.99)
	return first50, mean50, first99, mean99
}

// streamsTargets are issue 29's targets on the model, in every stream:
// this kit's first-delivery p50 at most the Go two-phase lock's and
// Powertools', its mean of first and duplicate at most theirs, each p99
// stated beside; and 0 double effects for this kit everywhere it ran.
func (r report) streamsTargets() []target {
	x := r.streams
	if x == nil {
		return nil
	}
	var out []target
	if j := r.modelIndex(); j >= 0 {
		for s, st := range x.streams {
			kit := &x.stats[s][lineKit][j]
			peers := []struct {
				name   string
				stats  *streamStats
				within float64 // the kit's may be this many times the peer's
			}{{"1.05 × the Go two-phase lock's", &x.stats[s][lineTwoPhase][j], 1.05}}
			if pt := x.ptStats(s, j); pt != nil {
				peers = append(peers, struct {
					name   string
					stats  *streamStats
					within float64
				}{"Powertools'", pt, 1})
			}
			kf, km, kf99, km99 := firstAndMean(kit)
			for _, peer := range peers {
				pf, pm, pf99, pm99 := firstAndMean(peer.stats)
				out = append(out,
					target{fmt.Sprintf("%s: this kit's first-delivery p50 ≤ %s, on the model", st.name, peer.name),
						fmt.Sprintf("%s ms against %s (p99 %s against %s)", ms(kf), ms(pf), ms(kf99), ms(pf99)), float64(kf) <= peer.within*float64(pf)},
					target{fmt.Sprintf("%s: this kit's mean of first-delivery and duplicate p50s ≤ %s, on the model", st.name, peer.name),
						fmt.Sprintf("%s ms against %s (the same mean at p99: %s against %s)", ms(km), ms(pm), ms(km99), ms(pm99)), float64(km) <= peer.within*float64(pm)})
			}
		}
	}
	out = append(out, r.priceTargets()...)
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
		f := &x.stats[s][lineFloor][j]
		f50, d50, m50 := f.p(0.5)
		f99, d99, m99 := f.p(0.99)
		p("\nThe floor on the model, %s stream, same run: one 2-action `TransactWriteItems` per first delivery, p50 %s ms (p99 %s); one `GetItem` per duplicate, p50 %s ms (p99 %s); their mean %s ms (p99 %s).\n", st.name, ms(f50), ms(f99), ms(d50), ms(d99), ms(m50), ms(m99))
	}
}

// priceFactor is how many times the Go two-phase lock's price per
// million messages this kit's may be, at the top of its range, in a
// stream: in the rare stream a first delivery's transaction writes two
// items at transactional rates (4 WRU against the lock's 3), atomicity's
// premium; where duplicates are many the kit's must be about the lock's.
func priceFactor(st stream) float64 {
	if st.name == "rare" {
		return 1.35
	}
	return 1.10
}

// priceTargets: in each stream this kit's price per million messages,
// the top of its range, at most priceFactor times the lock's.
func (r report) priceTargets() []target {
	x, j := r.streams, r.countIndex()
	var out []target
	for s, st := range x.streams {
		_, _, kit := messageCost(st, &x.stats[s][lineKit][j])
		_, _, lock := messageCost(st, &x.stats[s][lineTwoPhase][j])
		k, l := kit.topDollars(), lock.topDollars()
		out = append(out, target{fmt.Sprintf("%s: this kit's price per million messages (the top of its range) ≤ %.2f × the Go two-phase lock's", st.name, priceFactor(st)),
			fmt.Sprintf("%s against %s (%.2f×)", kit.dollars(), lock.dollars(), k/max(l, 1e-9)), k <= priceFactor(st)*l})
	}
	return out
}
