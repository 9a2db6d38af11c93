package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/idemkit/kit/idem"
	"github.com/idemkit/kit/idem/idemtest"
)

func main() {
	log.SetFlags(0)
	if err := bench(); err != nil {
		log.Fatal(err)
	}
}

// bench is main, returning its error so the local server is stopped first.
func bench() error {
	var (
		latN      = flag.Int("latency", 300, "messages timed for latency, each delivered twice")
		tpN       = flag.Int("throughput", 1000, "messages for the throughput run, each delivered 3 times")
		accounts  = flag.Int("accounts", 100, "accounts the throughput run's messages credit")
		faultN    = flag.Int("faults", 100, "messages for the crash-window and race columns, and the lease section's concurrent duplicates")
		batchN    = flag.Int("batches", 30, "batches of 10 timed per scenario of the batch table")
		cpu       = flag.Bool("cpu", true, "run the Go benchmarks (kit CPU cost, local server by table size)")
		benchtime = flag.String("benchtime", "1s", "go test -benchtime for the kit's CPU benchmarks")
		count     = flag.Int("count", 5, "go test -count: runs per benchmark; the tables show the median")
		coldN     = flag.Int("coldstarts", 5, "cold starts per function under the Lambda emulator; 0 skips them")
		ptools    = flag.Bool("powertools", true, "also run Powertools for AWS Lambda (TypeScript) idempotency with node, installed by npm ci into "+powertoolsDir+": its section, and its line in the storm section")
		out       = flag.String("out", "", "also write the tables as Markdown to this file")
		benchOut  = flag.String("benchout", "", "write the Go benchmarks' raw output (benchstat's input) to this file")
		extDelay  = flag.Duration("external", 20*time.Millisecond, "latency of the external service the lease section's handler calls")
		envs      = flag.Int("environments", 8, "environments delivering each message at once in the lease section")
		relayN    = flag.Int("relay", 2000, "outbox messages the outbox section's relay sends")
		relayRTT  = flag.Duration("relayrtt", 20*time.Millisecond, "round trip of the SQS stand-in the outbox section's relay sends one batch to, in sequence and concurrently; 0 skips it")
		e2eN      = flag.Int("ledger", 50, "credits timed to their ledger entry on the local stack; 0 skips the stack")
		streamN   = flag.Int("streams", 400, "timed messages in each of the storm section's streams (rare duplicates, a counted and an uncounted storm of every message 3 times, every message twice), after 32 to warm up; the p50 of 200 draws of a transaction's published spread moves by about 5% from seed to seed, more than the gap to the two-phase lock its targets judge")
		sweepN    = flag.Int("sweep", 100, "timed messages in each stream of the ReadFirstAbove sweep (5%, 20%, 40% and 50% duplicates), after 32 to warm up")
		sweepAt   = flag.String("sweepat", "-1,0.1,0.5", "values of ReadFirstAbove the sweep runs beside the library's default, comma-separated")
		coalN     = flag.Int("coalesce", 50, "messages the coalesce section delivers 8 times at once each")
		hotN      = flag.Int("hot", 160, "messages of each run of the hot-item section (every line at each of -hotenvs environments, on 1 and on 10 accounts)")
		hotScale  = flag.Float64("hotscale", 3, "the hot-item section multiplies the model's latencies by this, and divides a partition's write units a second by it, so that the model, not the local server, sets the pace")
		hotEnvs   = flag.String("hotenvs", "1,8,64", "environments crediting at once in the hot-item section's runs, comma-separated")
		only      = flag.String("only", "", "run only these sections, comma-separated ("+strings.Join(sections, ", ")+"); empty runs them all")
		modelPath = flag.String("model", modelPublished, "DynamoDB latency model: a JSON file of per-operation p50/p99 (model.go has the format), \""+modelPublished+"\" for the published figures of model-published.json, or \""+modelOff+"\" to measure on the local server alone")
		seed      = flag.Uint64("seed", 1, "seed of the model's draws: a run with the same seed draws the same delays for each operation")
	)
	flag.StringVar(&goCmd, "go", "go", "the go command, for the Go benchmarks and the emulator's build")
	flag.StringVar(&makeCmd, "make", "make", "the make command, for the functions' builds")
	flag.Parse()
	runs, err := parseOnly(*only)
	if err != nil {
		return err
	}
	node := *ptools // the storm section's Powertools line, too
	*ptools = *ptools && runs("powertools")
	*cpu = *cpu && runs("cpu")
	if !runs("coldstarts") {
		*coldN = 0
	}
	if _, err := os.Stat("template.yaml"); err != nil && (*cpu || *coldN > 0) {
		return fmt.Errorf("run idem-bench from the module's root, where template.yaml and the Makefile are, or with -cpu=false -coldstarts 0: %w", err)
	}
	sweepValues, err := parseSweepAt(*sweepAt)
	if err != nil {
		return err
	}
	hotEnvList, err := parseHotEnvs(*hotEnvs)
	if err != nil {
		return err
	}
	if *hotN < 1 || !(*hotScale > 0) {
		return fmt.Errorf("-hot must be 1 or more messages and -hotscale a positive factor; got %d and %v", *hotN, *hotScale)
	}
	var m *model
	if *modelPath != modelOff {
		if m, err = loadModel(*modelPath); err != nil {
			return err
		}
	}
	ctx := context.Background()
	endpoint := idemtest.ExternalEndpoint()
	if endpoint == "" {
		srv, err := idemtest.StartDynamoDB(ctx)
		if err != nil {
			return err
		}
		defer srv.Stop()
		endpoint = srv.Endpoint
	}
	rep := report{started: time.Now(), endpoint: endpoint, latN: *latN, tpN: *tpN, accounts: *accounts, faultN: *faultN, batchN: *batchN, coldN: *coldN,
		servers: []server{{"local", endpoint}}, model: m, seed: *seed}
	var proxy *modelProxy
	if m != nil {
		if proxy, err = startProxy(m, endpoint, *seed); err != nil {
			return err
		}
		defer proxy.Close()
		rep.servers = append(rep.servers, server{"model", proxy.URL})
	}
	if slices.ContainsFunc([]string{"strategies", "powertools", "lease", "outbox", "storm", "sweep"}, runs) {
		log.Printf("idem-bench: a transaction's price beside a PutItem's, on %d server(s)", len(rep.servers))
		rep.ratioN = *latN
		if rep.ratios, err = measureRatio(ctx, rep.servers, *latN); err != nil {
			return err
		}
	}
	if runs("strategies") {
		if rep.rows, err = run(ctx, rep); err != nil {
			return err
		}
	}
	if runs("lease") {
		if rep.lease, err = runLease(ctx, rep.servers, *extDelay, *envs, *latN, *faultN); err != nil {
			return err
		}
	}
	if runs("outbox") {
		if rep.outbox, err = runOutbox(ctx, rep.servers, *latN, *relayN, *e2eN, *relayRTT); err != nil {
			return err
		}
	}
	if *ptools {
		if rep.powertools, err = runPowertools(ctx, rep.servers, powertoolsDir, *latN, *faultN); err != nil {
			return err
		}
		if why := rep.powertools.skipped; why != "" {
			log.Printf("idem-bench: Powertools peer skipped: %s", why)
		}
	}
	if runs("storm") {
		if rep.streams, err = runStreamsSection(ctx, rep.servers, *streamN, *seed, node, powertoolsDir); err != nil {
			return err
		}
	}
	if runs("sweep") {
		if rep.sweep, err = runSweep(ctx, rep.servers, *sweepN, sweepValues, *seed); err != nil {
			return err
		}
	}
	if runs("coalesce") {
		if rep.coalesce, err = runCoalesce(ctx, rep.servers, *coalN); err != nil {
			return err
		}
	}
	if runs("hot") {
		if m == nil {
			rep.hot = &hotResult{skipped: "-model off: its conflict model runs in the latency model's proxy"}
		} else if rep.hot, err = runHot(ctx, endpoint, m, *seed, hotConfig{messages: *hotN, envs: hotEnvList, accounts: hotAccounts, scale: *hotScale,
			deadline: hotDeadline, lines: hotLines, powertools: node, ptDir: powertoolsDir, rateFor: 2 * time.Second}); err != nil {
			return err
		}
	}
	if *cpu {
		raw := os.Stderr
		if *benchOut != "" {
			if raw, err = os.Create(*benchOut); err != nil {
				return err
			}
			defer raw.Close()
		}
		log.Printf("idem-bench: Go benchmarks (-count %d)", *count)
		if rep.cpu, err = runGoBenchmarks(ctx, endpoint, *benchtime, *count, raw); err != nil {
			return err
		}
	}
	if *coldN > 0 {
		log.Printf("idem-bench: cold starts (each function built with make, as sam build does)")
		if rep.cold, err = coldStarts(ctx, endpoint, ".", *coldN); err != nil {
			return err
		}
	}
	if proxy != nil {
		rep.counts = proxy.Counts()
	}
	md := rep.markdown()
	fmt.Print(md)
	if *out != "" {
		return os.WriteFile(*out, []byte(md), 0o644)
	}
	return nil
}

// run measures every strategy: latency on every server, the rest on the
// local server.
func run(ctx context.Context, rep report) ([]row, error) {
	builders := []struct {
		name      string
		batchMode bool
		build     func(su *setup, processed string) (strategy, error)
	}{
		{"this kit, per record (claim + effect, one transaction)", false, func(su *setup, processed string) (strategy, error) {
			store, err := idem.New(su.client, processed, quietStore)
			if err != nil {
				return nil, err
			}
			return newSQSKit(store, su.accounts, false)
		}},
		{"this kit, per record, with its claim cache (CacheSize 1000)", false, func(su *setup, processed string) (strategy, error) {
			store, err := idem.New(su.client, processed, quietStore, func(o *idem.Options) { o.CacheSize = 1000 })
			if err != nil {
				return nil, err
			}
			k, err := newSQSKit(store, su.accounts, false)
			return cachedKit{k}, err
		}},
		{"this kit, batch transactions", true, func(su *setup, processed string) (strategy, error) {
			store, err := idem.New(su.client, processed, quietStore)
			if err != nil {
				return nil, err
			}
			return newSQSKit(store, su.accounts, true)
		}},
		{"check-then-act (Get, effect, Put)", false, func(su *setup, processed string) (strategy, error) {
			return &checkThenAct{c: su.client, processed: processed, accounts: su.accounts}, nil
		}},
		{"two-phase lock (Powertools)", false, func(su *setup, processed string) (strategy, error) {
			return &twoPhase{c: su.client, processed: processed, accounts: su.accounts, now: time.Now}, nil
		}},
		{"the same transaction by hand (no kit code)", false, func(su *setup, processed string) (strategy, error) {
			return &handTx{c: su.client, processed: processed, accounts: su.accounts, now: time.Now}, nil
		}},
		{"bare UpdateItem (floor, no idempotency)", false, func(su *setup, processed string) (strategy, error) {
			return &bare{c: su.client, accounts: su.accounts}, nil
		}},
	}
	// sus[j][k] is strategy k on server j; their tables are their own.
	sus := make([][]setup, len(rep.servers))
	var rows []row
	for j, sv := range rep.servers {
		for _, b := range builders {
			su := setup{calls: &idemtest.CallCounter{}}
			su.client = idemtest.Client(sv.endpoint, su.calls.Option)
			processed, err := idemtest.CreateTableContext(ctx, su.client, idemtest.Table{Name: "bench-processed", HashKey: "pk", TTLAttribute: "expiresAt"})
			if err != nil {
				return nil, err
			}
			if su.accounts, err = idemtest.CreateTableContext(ctx, su.client, idemtest.Table{Name: "bench-accounts", HashKey: "account"}); err != nil {
				return nil, err
			}
			if su.strategy, err = b.build(&su, processed); err != nil {
				return nil, err
			}
			sus[j] = append(sus[j], su)
			if j == 0 {
				rows = append(rows, row{name: b.name, batchMode: b.batchMode, crashMessages: rep.faultN, raceMessages: rep.faultN})
			}
		}
	}
	// Each measure takes turns between the strategies, so that a change
	// in the shared machine's load falls on all of them alike.
	if err := latencies(ctx, sus, rows, rep.latN); err != nil {
		return nil, err
	}
	log.Printf("idem-bench: latency done")
	// The batch table takes turns between both kits on every server: kit
	// r on server j is kits[j*len(kitRows)+r].
	var (
		kits    []*sqsKit
		kitSus  []setup
		kitRows []int
	)
	for j := range sus {
		for i, su := range sus[j] {
			if k, ok := su.strategy.(*sqsKit); ok {
				kits, kitSus = append(kits, k), append(kitSus, su)
				if j == 0 {
					kitRows = append(kitRows, i)
				}
			}
		}
	}
	tables, err := batchTables(ctx, kitSus, kits, rep.batchN)
	if err != nil {
		return nil, err
	}
	for r, i := range kitRows {
		for j := range sus {
			rows[i].batches = append(rows[i].batches, tables[j*len(kitRows)+r])
		}
		if rows[i].batchMode {
			// Per message, in batches of 10 new, then redelivered, messages.
			local := rows[i].batches[0]
			rows[i].callsFirst, rows[i].callsDup = local[0].calls/10, local[1].calls/10
		}
	}
	log.Printf("idem-bench: batch table done")
	// Throughput and the fault columns count effects: the local server's
	// answers suffice.
	if err := throughputs(ctx, sus[0], rows, rep.tpN, rep.accounts); err != nil {
		return nil, err
	}
	log.Printf("idem-bench: throughput done")
	for i, su := range sus[0] {
		r := &rows[i]
		prefix := fmt.Sprint("s", i)
		var err error
		if r.crashDoubles, err = crashWindow(ctx, su, prefix, rep.faultN); err != nil {
			return nil, fmt.Errorf("%s: crash window: %w", r.name, err)
		}
		if r.raceDoubles, err = race(ctx, su, prefix, rep.faultN); err != nil {
			return nil, fmt.Errorf("%s: race: %w", r.name, err)
		}
		log.Printf("idem-bench: %s done", r.name)
	}
	floor := rows[len(rows)-1].lat
	for i := range rows {
		for j := range rows[i].lat {
			rows[i].lat[j].ratio = ratio(rows[i].lat[j].p50First, floor[j].p50First)
		}
	}
	return rows, nil
}

// batchDeliverer is how the throughput run hands batches to a strategy:
// the SQS adapter takes the batch whole; the others run its records at once.
func batchDeliverer(st strategy) func(context.Context, []message) []message {
	if b, ok := st.(interface {
		deliverBatch(context.Context, []message) []message
	}); ok {
		return b.deliverBatch
	}
	return concurrentBatch(st)
}

// sections are the parts of a run that -only names.
var sections = []string{"strategies", "powertools", "storm", "sweep", "coalesce", "hot", "cpu", "coldstarts", "lease", "outbox"}

// parseOnly reads -only: a comma-separated list of sections, or "" for
// all of them.
func parseOnly(only string) (func(section string) bool, error) {
	if only == "" {
		return func(string) bool { return true }, nil
	}
	want := map[string]bool{}
	for name := range strings.SplitSeq(only, ",") {
		name = strings.TrimSpace(name)
		if !slices.Contains(sections, name) {
			return nil, fmt.Errorf("-only: unknown section %q; the sections are %s", name, strings.Join(sections, ", "))
		}
		want[name] = true
	}
	return func(section string) bool { return want[section] }, nil
}
