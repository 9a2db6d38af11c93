package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/idemkit/kit/idem/idemtest"
)

// powertoolsDir holds the peer itself: Powertools for AWS Lambda
// (TypeScript) idempotency pinned in package-lock.json, and bench.js,
// which drives it. Relative to the module's root, where idem-bench runs.
const powertoolsDir = "idem/cmd/idem-bench/powertools"

// ptMode is one Powertools configuration's latencies and calls, as
// bench.js prints them.
type ptMode struct {
	CallsFirst float64            `json:"callsFirst"`
	CallsDup   float64            `json:"callsDup"`
	OpsFirst   map[string]float64 `json:"opsFirst"`
	OpsDup     map[string]float64 `json:"opsDup"`
	FirstP50Ms float64            `json:"firstP50Ms"`
	FirstP99Ms float64            `json:"firstP99Ms"`
	DupP50Ms   float64            `json:"dupP50Ms"`
	DupP99Ms   float64            `json:"dupP99Ms"`

	CrashThrowDoubles int `json:"crashThrowDoubles"`
	CrashDieDoubles   int `json:"crashDieDoubles"`
	RaceDoubles       int `json:"raceDoubles"`
}

// ptModes are the two cache settings and their floor, a bare UpdateItem
// from the same process.
type ptModes struct {
	CacheOff ptMode `json:"cacheOff"`
	CacheOn  ptMode `json:"cacheOn"`
	Floor    ptMode `json:"floor"`
}

// powertoolsResult is bench.js's JSON object, or why it did not run.
type powertoolsResult struct {
	Versions map[string]string `json:"versions"`
	ptModes                    // on the local server
	// Model is the same through the model: latencies only.
	Model           *ptModes `json:"model"`
	Faults          int      `json:"faults"`
	DeadRemainingMs int      `json:"deadRemainingMs"`

	skipped string // why the peer did not run; "" when it did
}

// on is the modes measured on server j.
func (pt *powertoolsResult) on(j int) ptModes {
	if j == 0 || pt.Model == nil {
		return pt.ptModes
	}
	return *pt.Model
}

// runPowertools installs the pinned packages when needed, makes the tables
// Powertools' docs ask for, and runs bench.js against the local server,
// and the model when it runs. A machine without node or npm, or without
// the registry, gets a result that says why it was skipped rather than an
// error: the Go figures stand alone.
func runPowertools(ctx context.Context, servers []server, dir string, latN, faultN int) (*powertoolsResult, error) {
	if why, err := readyNode(ctx, dir); why != "" || err != nil {
		return &powertoolsResult{skipped: why}, err
	}
	log.Printf("idem-bench: Powertools for AWS Lambda (TypeScript), the npm package, on the same server")
	tables, err := powertoolsTables(ctx, servers[0].endpoint, "bench-powertools")
	if err != nil {
		return nil, err
	}
	var res powertoolsResult
	if err := runBenchJS(ctx, dir, servers, tables, &res,
		"IDEM_BENCH_LATENCY="+strconv.Itoa(latN),
		"IDEM_BENCH_FAULTS="+strconv.Itoa(faultN),
	); err != nil {
		return nil, err
	}
	return &res, nil
}

// readyNode checks node and npm, and installs the pinned packages when
// needed; why says why the peer cannot run, or is "".
func readyNode(ctx context.Context, dir string) (why string, err error) {
	for _, cmd := range []string{"node", "npm"} {
		if _, err := exec.LookPath(cmd); err != nil {
			return fmt.Sprintf("%s is not on PATH (install Node.js 20 or later to run it)", cmd), nil
		}
	}
	// The AWS SDK for JavaScript v3 declares engines node >= 20.
	out, err := exec.CommandContext(ctx, "node", "--version").Output()
	v := strings.TrimSpace(string(out))
	if major, _, _ := strings.Cut(strings.TrimPrefix(v, "v"), "."); err != nil || atoi(major) < 20 {
		return fmt.Sprintf("node %s is older than 20, which the AWS SDK for JavaScript v3 requires", v), nil
	}
	if _, err := os.Stat(filepath.Join(dir, "package-lock.json")); err != nil {
		return fmt.Sprintf("%s/package-lock.json not found: run idem-bench from the module's root", dir), nil
	}
	if !installed(dir) {
		npm := exec.CommandContext(ctx, "npm", "ci", "--no-audit", "--no-fund")
		npm.Dir, npm.Stdout, npm.Stderr = dir, os.Stderr, os.Stderr // stdout is the report's
		if err := npm.Run(); err != nil {
			return fmt.Sprintf("npm ci in %s failed (%v): is the npm registry reachable?", dir, err), nil
		}
	}
	return "", nil
}

// ptTables are the tables one run of bench.js uses: its records, in
// Powertools' default schema, and the accounts its handler credits.
type ptTables struct{ records, accounts string }

// powertoolsTables makes them on the local server (the model's proxy
// forwards to it): partition key "id" (String), TTL on "expiration", as
// DynamoDBPersistenceLayer's keyAttr and expiryAttr default to.
func powertoolsTables(ctx context.Context, endpoint, name string) (ptTables, error) {
	client := idemtest.Client(endpoint)
	records, err := idemtest.CreateTableContext(ctx, client, idemtest.Table{Name: name, HashKey: "id", TTLAttribute: "expiration"})
	if err != nil {
		return ptTables{}, err
	}
	accounts, err := idemtest.CreateTableContext(ctx, client, idemtest.Table{Name: name + "-accounts", HashKey: "account"})
	return ptTables{records, accounts}, err
}

// runBenchJS runs node bench.js with the endpoints, the tables and env
// besides, and decodes the one JSON object it prints into v.
func runBenchJS(ctx context.Context, dir string, servers []server, t ptTables, v any, env ...string) error {
	node := exec.CommandContext(ctx, "node", "bench.js")
	node.Dir, node.Stderr = dir, os.Stderr
	node.Env = append(append(os.Environ(),
		"IDEM_BENCH_ENDPOINT="+servers[0].endpoint,
		"IDEM_BENCH_POWERTOOLS_TABLE="+t.records,
		"IDEM_BENCH_ACCOUNTS_TABLE="+t.accounts,
		// Over the same tables: the model's proxy forwards to the same server.
		"IDEM_BENCH_MODEL_ENDPOINT="+modelEndpoint(servers),
		// Powertools prefixes its keys with the function's name, as in Lambda.
		"AWS_LAMBDA_FUNCTION_NAME=bench-powertools",
		// The report records node's version; the SDK's notice that its
		// releases after January 2027 need node 22 would only add 8 lines here.
		"AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED=true",
	), env...)
	var stdout bytes.Buffer
	node.Stdout = &stdout
	if err := node.Run(); err != nil {
		return fmt.Errorf("powertools: node bench.js: %w", err)
	}
	if err := json.Unmarshal(stdout.Bytes(), v); err != nil {
		return fmt.Errorf("powertools: bench.js printed %q: %w", stdout.String(), err)
	}
	return nil
}

// installed reports whether node_modules was installed from the current
// package-lock.json: npm writes node_modules/.package-lock.json on every
// install, so an older one means the lock changed since.
func installed(dir string) bool {
	lock, err1 := os.Stat(filepath.Join(dir, "package-lock.json"))
	done, err2 := os.Stat(filepath.Join(dir, "node_modules", ".package-lock.json"))
	return err1 == nil && err2 == nil && !done.ModTime().Before(lock.ModTime())
}

// modelEndpoint is the model's endpoint, or "" without it.
func modelEndpoint(servers []server) string {
	if len(servers) < 2 {
		return ""
	}
	return servers[1].endpoint
}

func atoi(s string) int {
	n, _ := strconv.Atoi(s)
	return n
}

// ops writes calls per message by operation: "PutItem 1.00, UpdateItem 2.00".
func ops(m map[string]float64) string {
	var parts []string
	for _, op := range []string{"GetItem", "PutItem", "UpdateItem", "DeleteItem", "TransactWriteItems"} {
		if c := m[op]; c > 0 {
			parts = append(parts, fmt.Sprintf("%s %.2f", op, c))
		}
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

// powertoolsSection writes the peer's table beside the kit's figures from
// the same run.
func (r report) powertoolsSection(p func(string, ...any)) {
	pt := r.powertools
	if pt == nil {
		return
	}
	p("## Powertools for AWS Lambda (TypeScript), the package itself\n\n")
	if pt.skipped != "" {
		p("Skipped in this run: %s.\n\n", pt.skipped)
		return
	}
	p("`@aws-lambda-powertools/idempotency` %s with its `DynamoDBPersistenceLayer` (`@aws-sdk/client-dynamodb` %s, `@aws-sdk/lib-dynamodb` %s, Node %s), installed by `npm ci` from `%s/package-lock.json` and driven by `bench.js` beside it, on the same local server in this run. ",
		pt.Versions["@aws-lambda-powertools/idempotency"], pt.Versions["@aws-sdk/client-dynamodb"], pt.Versions["@aws-sdk/lib-dynamodb"], pt.Versions["node"], powertoolsDir)
	p("The handler is written as a Powertools user writes it: `makeIdempotent` (`eventKeyJmesPath: 'id'`) around a function that makes its own `UpdateItem ADD balance` through a `DynamoDBDocumentClient` on the persistence layer's client; the table has Powertools' default schema (partition key `id`, TTL on `expiration`). Calls are counted by a middleware at the SDK's initialize step, as on the Go side. ")
	p("Latency as above, %d messages one at a time, each delivered twice, after 3 warm-up deliveries; the two cache settings and a bare `UpdateItem` from the same Node process (their floor) take turns, each on every server in turn. ", r.latN)
	p("Crash window, %d messages per setting, on the local server, every delivery retried until it succeeds: the handler throws after its write (Powertools deletes its record), or its process dies there (the `INPROGRESS` record stays until the %d ms the invocation had left run out; redeliveries get \"already in progress\" until then). The kit's and the Go two-phase lock's figures are theirs from the tables above, their floor the Go bare `UpdateItem`.\n\n", pt.Faults, pt.DeadRemainingMs)
	p("| strategy | calls/first | calls/dup | double effects, handler throws after its write | double effects, process dies after its write | double effects, concurrent redelivery |\n")
	p("|---|---|---|---|---|---|\n")
	of := func(d int) string { return fmt.Sprintf("%d of %d", d, pt.Faults) }
	head, rule := r.latencyHeader("first p50 ms", "first p99 ms", "dup p50 ms", "dup p99 ms", "first p50 / floor")
	var lat []string // the latency table's lines, written after this one
	line := func(name string, mode func(ptModes) ptMode, crash ...string) {
		m := mode(pt.ptModes)
		if crash == nil {
			crash = []string{of(m.CrashThrowDoubles), of(m.CrashDieDoubles), of(m.RaceDoubles)}
		}
		p("| %s | %.2f | %.2f | %s | %s | %s |\n", name, m.CallsFirst, m.CallsDup, crash[0], crash[1], crash[2])
		lat = append(lat, fmt.Sprintf("| %s | %s |\n", name, sideBySide(5, len(r.servers), func(f, j int) string {
			on := pt.on(j)
			m := mode(on)
			if f == 4 {
				return fmt.Sprintf("%.2f×", m.FirstP50Ms/on.Floor.FirstP50Ms)
			}
			return fmt.Sprintf("%.2f", []float64{m.FirstP50Ms, m.FirstP99Ms, m.DupP50Ms, m.DupP99Ms}[f])
		})))
	}
	line("Powertools, `useLocalCache: false` (its default)", func(m ptModes) ptMode { return m.CacheOff })
	line("Powertools, `useLocalCache: true`", func(m ptModes) ptMode { return m.CacheOn })
	line("bare `UpdateItem` from the same Node process (floor, no idempotency)", func(m ptModes) ptMode { return m.Floor }, "—", "—", "—")
	for _, w := range r.rows {
		if w.batchMode || !(w.batches != nil || strings.HasPrefix(w.name, "two-phase")) {
			continue
		}
		throw, die := "n/a: the kit writes after the handler returns", fmt.Sprintf("%d of %d", w.crashDoubles, w.crashMessages)
		if w.batches == nil { // the Go two-phase lock: its crash column is a failure after the effect
			throw, die = die, "—"
		}
		name := w.name + ", Go, same run"
		p("| %s | %.2f | %.2f | %s | %s | %d of %d |\n", name, w.callsFirst, w.callsDup, throw, die, w.raceDoubles, w.raceMessages)
		lat = append(lat, fmt.Sprintf("| %s | %s |\n", name, r.latencyCells(w.lat)))
	}
	p("\nLatency, each floor on its own server:\n\n| strategy | %s\n|---|%s\n%s", head, rule, strings.Join(lat, ""))
	p("\nPowertools' calls by operation, per message: first delivery %s; duplicate %s without the cache, %s with it.\n\n",
		ops(pt.CacheOff.OpsFirst), ops(pt.CacheOff.OpsDup), ops(pt.CacheOn.OpsDup))
}
