package main

import (
	"context"
	"fmt"
	"log"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemkit/kit/idem"
	"github.com/idemkit/kit/idem/idemtest"
)

// Deliveries of one key at once in one process (Lambda Managed Instances
// run several invokes in one process; a batch may carry a message twice):
// one Store, coalesceAt goroutines released together, each delivering the
// same message through Store.Process, the handler holding coalesceHold so
// that all of them meet.

const (
	coalesceAt   = 8
	coalesceHold = 50 * time.Millisecond
)

// coalesceRow is one server's figures.
type coalesceRow struct {
	ops      map[string]int // DynamoDB calls by operation
	runs     int            // handler runs
	outcomes map[idem.Outcome]int
	cached   int // deliveries answered with no call of their own
	doubles  int
	took     []time.Duration // per message, from the release to the last answer
}

// calls is every DynamoDB call the Store made.
func (w coalesceRow) calls() int {
	n := 0
	for _, c := range w.ops {
		n += c
	}
	return n
}

// coalesceResult is the coalesce section of a run.
type coalesceResult struct {
	n    int
	rows []coalesceRow // by server
}

// runCoalesce delivers n messages, one after another, each coalesceAt
// times at once through one Store per server, the servers taking turns,
// and counts the calls, the handler's runs, the outcomes and the credits.
func runCoalesce(ctx context.Context, servers []server, n int) (*coalesceResult, error) {
	log.Printf("idem-bench: coalesce: %d messages, each delivered %d times at once in one process", n, coalesceAt)
	type env struct {
		su    setup
		store *idem.Store
		runs  atomic.Int64
	}
	envs := make([]*env, len(servers))
	for j, sv := range servers {
		e := &env{su: setup{calls: &idemtest.CallCounter{}}}
		e.su.client = idemtest.Client(sv.endpoint, e.su.calls.Option)
		processed, err := idemtest.CreateTableContext(ctx, e.su.client, idemtest.Table{Name: "bench-coalesce-processed", HashKey: "pk", TTLAttribute: "expiresAt"})
		if err != nil {
			return nil, err
		}
		if e.su.accounts, err = idemtest.CreateTableContext(ctx, e.su.client, idemtest.Table{Name: "bench-coalesce-accounts", HashKey: "account"}); err != nil {
			return nil, err
		}
		if e.store, err = idem.New(e.su.client, processed, quietStore); err != nil {
			return nil, err
		}
		e.su.calls.Reset() // the tables' creation is not the Store's
		envs[j] = e
	}
	res := &coalesceResult{n: n, rows: make([]coalesceRow, len(servers))}
	for j := range res.rows {
		res.rows[j].outcomes = map[idem.Outcome]int{}
	}
	for i := range n {
		for j, e := range envs {
			id := fmt.Sprintf("coalesce-%d", i)
			h := func(_ context.Context, m idem.Message) (idem.Effect, error) {
				e.runs.Add(1)
				time.Sleep(coalesceHold)
				up := creditUpdate(e.su.accounts, message{account: m.ID, cents: 1})
				return idem.Effect{Writes: []types.TransactWriteItem{{Update: up}}, Response: []byte("ok")}, nil
			}
			var (
				mu   sync.Mutex
				errs []error
				wg   sync.WaitGroup
			)
			release := make(chan struct{})
			w := &res.rows[j]
			for range coalesceAt {
				wg.Go(func() {
					<-release
					r, err := e.store.Process(ctx, idem.Message{ID: id, Source: "bench", Payload: []byte(`{"cents":1}`)}, h)
					mu.Lock()
					defer mu.Unlock()
					if err != nil {
						errs = append(errs, err)
						return
					}
					w.outcomes[r.Outcome]++
					if r.Cached {
						w.cached++
					}
				})
			}
			start := time.Now()
			close(release)
			wg.Wait()
			w.took = append(w.took, time.Since(start))
			if len(errs) > 0 {
				return nil, fmt.Errorf("coalesce, on %s: %s: %d of %d deliveries failed, the first: %w", servers[j].name, id, len(errs), coalesceAt, errs[0])
			}
		}
	}
	for j, e := range envs {
		w := &res.rows[j]
		w.ops = opsSince(e.su.calls, make([]int, len(countedOps)))
		w.runs = int(e.runs.Load())
		var err error
		if w.doubles, err = creditedTwice(ctx, e.su.client, e.su.accounts, "coalesce", n); err != nil {
			return nil, fmt.Errorf("coalesce, on %s: %w", servers[j].name, err)
		}
	}
	return res, nil
}

// coalesceSection writes the coalescing line's table.
func (r report) coalesceSection(p func(string, ...any)) {
	c := r.coalesce
	if c == nil {
		return
	}
	p("## Deliveries of one key at once in one process\n\n")
	p("One `Store` (default options) per server; %d messages one after another, each delivered %d times at once through `Store.Process` (%d goroutines released together; the handler holds %s before it describes its credit, so that all of them meet), the servers taking turns. Lambda Managed Instances run several invokes in one process, and a batch may carry a message twice: deliveries of one key in flight in one process coalesce, one runs the handler and commits, the others wait for its outcome and answer from it. Calls and runs are per message; the time is from the release to the last of the %d answers.\n\n", c.n, coalesceAt, coalesceAt, coalesceHold, coalesceAt)
	p("| server | calls per message | by operation | handler runs per message | outcomes per message | answered with no call, per message | double effects | p50 ms, all %d answered | p99 ms |\n|---|---|---|---|---|---|---|---|---|\n", coalesceAt)
	per := func(v int) float64 { return float64(v) / float64(c.n) }
	for j, w := range c.rows {
		p("| %s | %.2f | %s | %.2f | %s | %.2f | %d of %d | %s | %s |\n", r.servers[j].name, per(w.calls()), ops(perDelivery(w.ops, c.n)), per(w.runs),
			outcomesPer(w.outcomes, c.n), per(w.cached), w.doubles, c.n, ms(percentile(w.took, 0.5)), ms(percentile(w.took, 0.99)))
	}
	p("\n")
}

// outcomesPer writes outcomes per message: "Processed 1.00, Duplicate 7.00".
func outcomesPer(o map[idem.Outcome]int, n int) string {
	var parts []string
	for _, k := range []idem.Outcome{idem.Processed, idem.Duplicate, idem.Rejected} {
		if o[k] > 0 {
			parts = append(parts, fmt.Sprintf("%s %.2f", k, float64(o[k])/float64(n)))
		}
	}
	return strings.Join(parts, ", ")
}

// coalesceTargets: one call and one handler run per message, on every
// server.
func (r report) coalesceTargets() []target {
	c := r.coalesce
	if c == nil {
		return nil
	}
	var measured []string
	met := true
	for j, w := range c.rows {
		calls, runs := float64(w.calls())/float64(c.n), float64(w.runs)/float64(c.n)
		measured = append(measured, fmt.Sprintf("%s: %.2f call (%s), %.2f handler run, %d double effects", r.servers[j].name, calls, ops(perDelivery(w.ops, c.n)), runs, w.doubles))
		met = met && w.calls() == c.n && w.ops["TransactWriteItems"] == c.n && w.runs == c.n && w.doubles == 0
	}
	return []target{{fmt.Sprintf("%d concurrent deliveries of one key in one process → 1.00 call (and 1.00 handler run) per message", coalesceAt), strings.Join(measured, "; "), met}}
}
