package main

import (
	"context"
	"fmt"
	"log"
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
	lines := []streamLine{kitLine("default", false)}
	for _, v := range values {
		s := strconv.FormatFloat(v, 'g', -1, 64)
		res.values = append(res.values, s)
		lines = append(lines, kitLine(s, false, func(o *idem.Options) { o.ReadFirstAbove = v }))
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

// expectedMs is what the model's distributions make a delivery of this
// kit cost on average, from the calls it made: each GetItem at
// GetItem's mean, each transaction of a first delivery at a committed
// 2-action transaction's, each of a duplicate at a cancelled one's. No
// draw's luck is in it, so it tells values apart that the measured mean's
// noise may not.
func expectedMs(m *model, st streamStats) float64 {
	mean := func(op string, cancelled bool) float64 {
		items := 1
		if byItems(op) {
			items = 2
		}
		q, _ := m.lookup(op, items, cancelled)
		return q.mean()
	}
	var sum float64
	for _, side := range []struct {
		ops       map[string]int
		cancelled bool
	}{{st.opsFirst, false}, {st.opsDup, true}} {
		for op, c := range side.ops {
			sum += float64(c) * mean(op, side.cancelled && op == "TransactWriteItems")
		}
	}
	return sum / float64(max(len(st.first)+len(st.dup), 1))
}
