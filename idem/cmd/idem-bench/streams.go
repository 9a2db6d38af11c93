package main

// Duplicates in numbers (issue 18): streams of deliveries in which some
// messages come more than once, played in one order by this kit, by the
// floor (one transaction per first delivery, one read per duplicate, no
// idempotency code) and by Powertools for TypeScript (bench.js), on every
// server; and a sweep of Options.ReadFirstAbove over streams of several
// shares of duplicates, on the model.

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemkit/kit/idem/idemtest"
)

// streamStats is one strategy's figures over one stream's timed
// deliveries on one server.
type streamStats struct {
	first, dup       []time.Duration
	opsFirst, opsDup map[string]int // calls by operation, summed
	doubles          int            // messages credited more than once, the warm-up's included
}

func (st *streamStats) add(d delivery, took time.Duration, ops map[string]int) {
	list, sum := &st.first, &st.opsFirst
	if d.dup {
		list, sum = &st.dup, &st.opsDup
	}
	*list = append(*list, took)
	addOps(sum, ops)
}

func addOps(sum *map[string]int, ops map[string]int) {
	if *sum == nil {
		*sum = map[string]int{}
	}
	for op, c := range ops {
		(*sum)[op] += c
	}
}

// perDelivery is calls by operation over n deliveries.
func perDelivery(ops map[string]int, n int) map[string]float64 {
	out := map[string]float64{}
	for op, c := range ops {
		out[op] = float64(c) / float64(max(n, 1))
	}
	return out
}

// p is the p50 or p99 of the first deliveries, the duplicates, and their
// mean: (first + dup) / 2.
func (st streamStats) p(q float64) (first, dup, mean time.Duration) {
	if len(st.first) > 0 {
		first = percentile(st.first, q)
	}
	if len(st.dup) > 0 {
		dup = percentile(st.dup, q)
	}
	return first, dup, (first + dup) / 2
}

// meanMs is the arithmetic mean of every timed delivery, in milliseconds:
// what a delivery of the stream costs on average.
func (st streamStats) meanMs() float64 {
	var sum time.Duration
	for _, d := range st.first {
		sum += d
	}
	for _, d := range st.dup {
		sum += d
	}
	return float64(sum.Microseconds()) / 1000 / float64(max(len(st.first)+len(st.dup), 1))
}

// countedOps are the operations counted per delivery.
var countedOps = []string{"GetItem", "PutItem", "UpdateItem", "DeleteItem", "TransactWriteItems"}

func countOps(c *idemtest.CallCounter) []int {
	out := make([]int, len(countedOps))
	for i, op := range countedOps {
		out[i] = c.Count(op)
	}
	return out
}

// opsSince is the calls made since before, by operation.
func opsSince(c *idemtest.CallCounter, before []int) map[string]int {
	out := map[string]int{}
	for i, n := range countOps(c) {
		if d := n - before[i]; d > 0 {
			out[countedOps[i]] = d
		}
	}
	return out
}

// runStreams plays each stream through every line on every server, one
// delivery at a time, taking turns for each delivery between the lines
// and, for each, between the servers; each line keeps its tables on each
// server. It returns stats[stream][line][server].
func runStreams(ctx context.Context, servers []server, streams []stream, lines []streamLine, tag string) ([][][]streamStats, error) {
	type env struct {
		su        setup
		processed string
	}
	envs := make([][]env, len(lines))
	for k := range lines {
		for _, sv := range servers {
			e := env{su: setup{calls: &idemtest.CallCounter{}, outcomes: &idemtest.Outcomes{}}}
			e.su.client = idemtest.Client(sv.endpoint, e.su.calls.Option)
			var err error
			if e.processed, err = idemtest.CreateTableContext(ctx, e.su.client, idemtest.Table{Name: "bench-" + tag + "-processed", HashKey: "pk", TTLAttribute: "expiresAt"}); err != nil {
				return nil, err
			}
			if e.su.accounts, err = idemtest.CreateTableContext(ctx, e.su.client, idemtest.Table{Name: "bench-" + tag + "-accounts", HashKey: "account"}); err != nil {
				return nil, err
			}
			envs[k] = append(envs[k], e)
		}
	}
	out := make([][][]streamStats, len(streams))
	for s, st := range streams {
		deliver := make([][]deliverFunc, len(lines))
		out[s] = make([][]streamStats, len(lines))
		for k, l := range lines {
			out[s][k] = make([]streamStats, len(servers))
			for _, e := range envs[k] {
				d, err := l.build(e.su, e.processed, st.via)
				if err != nil {
					return nil, err
				}
				deliver[k] = append(deliver[k], d)
			}
		}
		prefix := streamPrefix(tag, st)
		for _, d := range st.deliveries {
			m := message{id: fmt.Sprintf("%s-%d", prefix, d.msg), account: fmt.Sprintf("%s-%d", prefix, d.msg), cents: 1}
			for k := range lines {
				for j := range servers {
					su := envs[k][j].su
					before := countOps(su.calls)
					start := time.Now()
					if err := deliver[k][j](ctx, m, d); err != nil {
						return nil, fmt.Errorf("%s, %s, on %s: %s: %w", st.name, lines[k].name, servers[j].name, m.id, err)
					}
					took := time.Since(start)
					if d.timed {
						out[s][k][j].add(d, took, opsSince(su.calls, before))
					}
				}
			}
		}
		for k := range lines {
			for j, e := range envs[k] {
				doubles, err := creditedTwice(ctx, e.su.client, e.su.accounts, prefix, st.warm+st.messages)
				if err != nil {
					return nil, fmt.Errorf("%s, %s, on %s: %w", st.name, lines[k].name, servers[j].name, err)
				}
				out[s][k][j].doubles = doubles
			}
		}
		log.Printf("idem-bench: %s: stream %q done", tag, st.name)
	}
	return out, nil
}

// streamPrefix names a stream's messages and accounts: unique per stream,
// as one line's tables serve every stream.
func streamPrefix(tag string, st stream) string {
	return tag + "-" + strings.ReplaceAll(st.name, " ", "")
}

// creditedTwice reads every balance of accounts (a Scan, which the model
// passes through undelayed) and counts the accounts prefix-0 … prefix-(n-1)
// credited more than once; one never credited is an error.
func creditedTwice(ctx context.Context, c *dynamodb.Client, accounts, prefix string, n int) (int, error) {
	bal, err := balances(ctx, c, accounts)
	if err != nil {
		return 0, err
	}
	doubles := 0
	for i := range n {
		switch b := bal[fmt.Sprintf("%s-%d", prefix, i)]; {
		case b == 0:
			return 0, fmt.Errorf("%s-%d was never credited", prefix, i)
		case b > 1:
			doubles++
		}
	}
	return doubles, nil
}

// balances is every account's balance in table.
func balances(ctx context.Context, c *dynamodb.Client, table string) (map[string]int, error) {
	out := map[string]int{}
	pages := dynamodb.NewScanPaginator(c, &dynamodb.ScanInput{TableName: aws.String(table), ConsistentRead: aws.Bool(true)})
	for pages.HasMorePages() {
		page, err := pages.NextPage(ctx)
		if err != nil {
			return nil, err
		}
		for _, it := range page.Items {
			acc, _ := it["account"].(*types.AttributeValueMemberS)
			bal, _ := it["balance"].(*types.AttributeValueMemberN)
			if acc == nil || bal == nil {
				continue
			}
			if out[acc.Value], err = strconv.Atoi(bal.Value); err != nil {
				return nil, fmt.Errorf("%s: balance %q: %w", acc.Value, bal.Value, err)
			}
		}
	}
	return out, nil
}

// streamsResult is the storm section of a run: its streams through this
// kit, the Go two-phase lock, the floor and Powertools.
type streamsResult struct {
	streams []stream
	lines   []streamLine
	stats   [][][]streamStats // [stream][line][server]
	pt      *ptStreams        // Powertools' own, or why it did not run
}

// ptStreams is bench.js's figures for the same streams.
type ptStreams struct {
	Versions map[string]string `json:"versions"`
	// Streams are by stream name, then by server, as bench.js prints them.
	Streams map[string][]ptStreamStats `json:"streams"`

	stats   [][]streamStats // [stream][server], from Streams
	skipped string
}

// ptStreamStats is one stream on one server as bench.js prints it: every
// timed delivery's milliseconds, and the calls by operation summed.
type ptStreamStats struct {
	FirstMs  []float64      `json:"firstMs"`
	DupMs    []float64      `json:"dupMs"`
	OpsFirst map[string]int `json:"opsFirst"`
	OpsDup   map[string]int `json:"opsDup"`
}

// sectionStreams are the storm section's streams: rare duplicates, a
// counted and an uncounted storm, every message twice through
// Store.Process.
func sectionStreams(n int, seed uint64) []stream {
	return []stream{rareStream(n, seed), stormStream(n, seed), uncountedStormStream(n, seed), twiceStream(n, seed)}
}

// runStreamsSection plays the section's streams of n timed messages each
// through streamLines, then through Powertools (unless ptools is false or
// node is missing).
func runStreamsSection(ctx context.Context, servers []server, n int, seed uint64, ptools bool, dir string) (*streamsResult, error) {
	res := &streamsResult{streams: sectionStreams(n, seed), lines: streamLines}
	log.Printf("idem-bench: storm: %d streams, %d messages each after %d to warm up, this kit, the Go two-phase lock and the floor", len(res.streams), n, streamWarm)
	var err error
	if res.stats, err = runStreams(ctx, servers, res.streams, res.lines, "streams"); err != nil {
		return nil, err
	}
	if !ptools {
		res.pt = &ptStreams{skipped: "-powertools=false"}
		return res, nil
	}
	if res.pt, err = runPowertoolsStreams(ctx, servers, dir, res.streams); err != nil {
		return nil, err
	}
	if res.pt.skipped != "" {
		log.Printf("idem-bench: storm: Powertools skipped: %s", res.pt.skipped)
	}
	return res, nil
}

// runPowertoolsStreams has bench.js play the same streams, in the same
// order, with Powertools' default configuration, on every server, and
// counts its double effects from its accounts table.
func runPowertoolsStreams(ctx context.Context, servers []server, dir string, streams []stream) (*ptStreams, error) {
	if why, err := readyNode(ctx, dir); why != "" || err != nil {
		return &ptStreams{skipped: why}, err
	}
	log.Printf("idem-bench: storm: the same streams through Powertools for TypeScript (bench.js)")
	tables, err := powertoolsTables(ctx, servers[0].endpoint, "bench-powertools-streams")
	if err != nil {
		return nil, err
	}
	// The order, as bench.js reads it: each delivery as [message, dup, timed].
	type jsStream struct {
		Name       string   `json:"name"`
		Prefix     string   `json:"prefix"`
		Deliveries [][3]any `json:"deliveries"`
	}
	var js []jsStream
	for _, st := range streams {
		j := jsStream{Name: st.name, Prefix: streamPrefix("pt", st)}
		for _, d := range st.deliveries {
			j.Deliveries = append(j.Deliveries, [3]any{d.msg, d.dup, d.timed})
		}
		js = append(js, j)
	}
	f, err := os.CreateTemp("", "idem-bench-streams-*.json")
	if err != nil {
		return nil, err
	}
	defer os.Remove(f.Name())
	err = json.NewEncoder(f).Encode(map[string]any{"streams": js})
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, err
	}
	var res ptStreams
	if err := runBenchJS(ctx, dir, servers, tables, &res, "IDEM_BENCH_STREAMS="+f.Name()); err != nil {
		return nil, err
	}
	client := idemtest.Client(servers[0].endpoint)
	for s, st := range streams {
		byServer := res.Streams[st.name]
		if len(byServer) != len(servers) {
			return nil, fmt.Errorf("powertools: bench.js gave %d servers' figures for stream %q, not %d", len(byServer), st.name, len(servers))
		}
		res.stats = append(res.stats, nil)
		for j, b := range byServer {
			ss := streamStats{opsFirst: b.OpsFirst, opsDup: b.OpsDup}
			for _, v := range b.FirstMs {
				ss.first = append(ss.first, msDuration(v))
			}
			for _, v := range b.DupMs {
				ss.dup = append(ss.dup, msDuration(v))
			}
			// bench.js names server j's messages and accounts "<prefix>.<j>-<i>".
			if ss.doubles, err = creditedTwice(ctx, client, tables.accounts, fmt.Sprintf("%s.%d", streamPrefix("pt", st), j), st.warm+st.messages); err != nil {
				return nil, fmt.Errorf("powertools, %s, on %s: %w", st.name, servers[j].name, err)
			}
			res.stats[s] = append(res.stats[s], ss)
		}
	}
	return &res, nil
}

func msDuration(ms float64) time.Duration { return time.Duration(ms * float64(time.Millisecond)) }
