package main

import (
	"context"
	"fmt"
	"log"
	"slices"
	"strconv"
	"strings"

	"github.com/idemkit/kit/idem"
)

// sweepShares are the sweep's streams: the share of their deliveries that
// are duplicates. A Store reads first above Options.ReadFirstAbove, so a
// value separates from the next only on a stream between them: 5% is the
// rare stream's, 50% each message twice, and 20% and 40% lie on either
// side of 0.3, where DynamoDB's published p50s make a read cost what it
// saves (a GetItem 7.55 ms, a cancelled transaction 25.3).
var sweepShares = []float64{0.05, 0.2, 0.4, 0.5}

// sweepEnvironments are the environments each value's deliveries spread
// over: a message is delivered at most 3 times, so each delivery reaches
// one that never saw the message.
const sweepEnvironments = 4

// sweepResult is the sweep section of a run: this kit with each value of
// ReadFirstAbove over each stream, on the model.
type sweepResult struct {
	n       int
	server  server
	values  []string // the lines' values, "" for the library's default
	streams []stream
	stats   [][]streamStats // [stream][value]
	skipped string          // why it did not run
}

// parseSweepAt reads -sweepat: comma-separated values of ReadFirstAbove,
// besides the library's default, which the sweep always has.
func parseSweepAt(list string) ([]float64, error) {
	var out []float64
	for v := range strings.SplitSeq(list, ",") {
		if v = strings.TrimSpace(v); v == "" {
			continue
		}
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || f == 0 {
			return nil, fmt.Errorf("-sweepat: %q is not a value of ReadFirstAbove (a number other than 0, which means the default)", v)
		}
		out = append(out, f)
	}
	return out, nil
}

// runSweep delivers each of sweepShares' streams, n timed messages each,
// through this kit with the library's default ReadFirstAbove and with each
// of values, taking turns, on the model alone: the local server prices a
// read and a transaction alike.
func runSweep(ctx context.Context, servers []server, n int, values []float64, seed uint64) (*sweepResult, error) {
	res := &sweepResult{n: n, values: []string{""}}
	if len(servers) < 2 {
		res.skipped = "-model off: the local server prices a read about like a transaction, so the sweep would say nothing"
		return res, nil
	}
	res.server = servers[1]
	lines := []streamLine{acrossEnvironments(kitLine("default"), sweepEnvironments)}
	for _, v := range values {
		s := strconv.FormatFloat(v, 'g', -1, 64)
		res.values = append(res.values, s)
		lines = append(lines, acrossEnvironments(kitLine(s, func(o *idem.Options) { o.ReadFirstAbove = v }), sweepEnvironments))
	}
	for _, share := range sweepShares {
		res.streams = append(res.streams, shareStream(n, share, seed))
	}
	log.Printf("idem-bench: sweep: ReadFirstAbove at the default and %v, %d streams of %d messages, on the model", values, len(res.streams), n)
	stats, err := runStreams(ctx, servers[1:], res.streams, lines, "sweep")
	if err != nil {
		return nil, err
	}
	for s := range stats {
		res.stats = append(res.stats, nil)
		for k := range stats[s] {
			res.stats[s] = append(res.stats[s], stats[s][k][0])
		}
	}
	return res, nil
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
	p("This kit with the library's default `ReadFirstAbove` (%s, left unset) and with each of %s, %d environments (`Store`s) and their own tables each, a message's deliveries each to the next environment, so that no duplicate reaches one that saw its key settled, taking turns for each delivery, on the %s alone, the records without receive counts (where the threshold alone decides); %d timed messages per stream after %d to warm up, in streams where 5%%, 20%%, 40%% and 50%% of the deliveries are duplicates (built as the streams above: a message's duplicate 1 to 9 messages after it). ",
		defaultReadFirstAbove, strings.Join(w.values[1:], ", "), sweepEnvironments, w.server.name, w.n, streamWarm)
	p("Each cell: the measured mean of every timed delivery / the model's expectation from the calls made, one after another (a read at a `GetItem`'s mean, a first delivery's transaction at a committed 2-action transaction's, a duplicate's at a cancelled one's), in ms; `GetItem`s per delivery; and the price per million messages by DynamoDB's documented units (the money table's rules, a cancelled transaction 2 to 4 WRU). The expectation has no draw's luck in it, so it separates values the measured mean's noise may not.\n\n")
	p("| ReadFirstAbove |")
	for _, st := range w.streams {
		p(" %s: measured / expected ms, reads, $ per million |", st.name)
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
			_, _, msg := messageCost(w.streams[s], &ss)
			p(" %.2f / %.2f, %.2f, %s |", ss.meanMs(), expectedMs(r.model, ss), reads, msg.dollars())
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
		p("By the model's expectation of time the library's default is the lowest, or within 1%% of it, on every stream.\n\n")
	} else {
		p("By the model's expectation of time the library's default is **not** the lowest on every stream: see the streams above where another value is. Time is not all: a lower value reads first for more deliveries, a first delivery's read 0.5 RRU more and a duplicate's read in place of a cancelled transaction (2 to 4 WRU); the price column weighs it.\n\n")
	}
}

// expectedMs is what the model's distributions make a delivery of this
// kit cost on average, from the calls it made, one after another: each
// read a GetItem's mean, each first delivery's transaction a committed
// 2-action transaction's, each duplicate's a cancelled one's. No draw's
// luck is in it, so it tells values apart that the measured mean's noise
// may not.
func expectedMs(m *model, st streamStats) float64 {
	get, _ := m.lookup("GetItem", 1, false)
	tx, _ := m.lookup("TransactWriteItems", 2, false)
	cancelled, _ := m.lookup("TransactWriteItems", 2, true)
	sum := float64(st.opsFirst["TransactWriteItems"])*tx.mean() + float64(st.opsDup["TransactWriteItems"])*cancelled.mean() +
		float64(st.opsFirst["GetItem"]+st.opsDup["GetItem"])*get.mean()
	return sum / float64(max(len(st.first)+len(st.dup), 1))
}
