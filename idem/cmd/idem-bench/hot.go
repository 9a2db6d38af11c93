package main

// The hot-item section (issue 34): N environments crediting one account,
// or ten, at once, through each line of hotLines and Powertools, behind
// the latency model with its conflict model on (conflicts.go), the
// latencies scaled so that the model, not the local server, sets the pace.
// Each run is one line at one (environments, accounts); the runs take
// turns line by line.

import (
	"context"
	"fmt"
	"log"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/idemkit/kit/idem/idemtest"
)

// hotAccounts are the accounts each count of environments credits (-hotenvs
// gives the counts).
var hotAccounts = []int{1, 10}

// hotDeadline is each delivery's deadline, as a Lambda invoke's timeout
// puts one on its context: 30 s of the run's clock (the latencies scaled
// with it are -hotscale times DynamoDB's).
const hotDeadline = 30 * time.Second

// hotConfig is one run of the section.
type hotConfig struct {
	messages       int // per run
	envs, accounts []int
	scale          float64       // the model's latencies are multiplied by it, the partition limit divided
	deadline       time.Duration // each delivery's
	lines          []hotLine
	powertools     bool   // also Powertools for TypeScript, through bench.js
	ptDir          string // where bench.js is
	rateFor        time.Duration
}

// hotRun is one line's figures at one (environments, accounts).
type hotRun struct {
	envs, accounts, messages int
	wall                     time.Duration   // first send to last credit applied
	credit                   []time.Duration // each message's first send to its commit
	failed                   int             // deliveries (records) that failed to the sender
	causes                   map[string]int  // why, as far as the line can tell (hotCauses)
	calls                    int             // DynamoDB calls, counted by the SDK middleware (the Store's one DescribeTable left out)
	ops                      map[string]int  // the same by operation
	tally                    proxyTally      // the proxy's answers
	doubles, lost            int             // credits applied beyond, and short of, each account's messages
	lag                      []time.Duration // a fold line's: each entry's commit to its fold into the balance
}

// hotResult is the section as run.
type hotResult struct {
	cfg       hotConfig
	model     string    // the scaled model, described
	rate      localRate // the local server's, measured before the runs
	limit     float64   // a partition's write units a second on the run's clock
	lines     []string  // the Go lines, then Powertools' when it ran
	runs      [][]hotRun
	ptVersion string
	skipped   string // why the section did not run; "" when it did
	ptSkipped string
}

// config is run index i's (environments, accounts): accounts outer.
func (x *hotResult) config(i int) (envs, accounts int) {
	return x.cfg.envs[i%len(x.cfg.envs)], x.cfg.accounts[i/len(x.cfg.envs)]
}

// scaled is m with every latency multiplied by f.
func (m *model) scaled(f float64) *model {
	out := &model{name: fmt.Sprintf("%s, latencies ×%g", m.name, f), source: m.source, lines: map[series][]figure{}}
	for _, g := range m.figures {
		g.P50Ms, g.P99Ms = math.Round(g.P50Ms*f*100)/100, math.Round(g.P99Ms*f*100)/100
		out.figures = append(out.figures, g)
		k := series{g.Operation, g.Cancelled}
		out.lines[k] = append(out.lines[k], g)
	}
	for _, l := range out.lines {
		sort.Slice(l, func(i, j int) bool { return l[i].Items < l[j].Items })
	}
	return out
}

// hotSection is what the runs share: the proxy with the conflict model,
// the tables, a client straight to the local server for the balances.
type hotSection struct {
	cfg                 hotConfig
	proxy               *modelProxy
	local               *dynamodb.Client
	processed, accounts string
	pt                  ptTables
	entries             string // made by the first fold line's run
	entryStream         *idemtest.StreamReader
}

// runHot runs the section: the local server's rate, then every line at
// every (environments, accounts), Powertools' last at each.
func runHot(ctx context.Context, endpoint string, m *model, seed uint64, cfg hotConfig) (*hotResult, error) {
	res := &hotResult{cfg: cfg, limit: partitionUnits / cfg.scale}
	var err error
	log.Printf("idem-bench: hot: the local server's own rate (%v each way)", cfg.rateFor)
	if res.rate, err = measureLocalRate(ctx, endpoint, cfg.rateFor); err != nil {
		return nil, err
	}
	sm := m.scaled(cfg.scale)
	res.model = sm.describe()
	cm := newConflicts(endpoint, res.limit, partitionUnits)
	h := &hotSection{cfg: cfg, local: idemtest.Client(endpoint)}
	if h.proxy, err = startProxy(sm, endpoint, seed, withConflicts(cm)); err != nil {
		return nil, err
	}
	defer h.proxy.Close()
	if h.processed, err = idemtest.CreateTableContext(ctx, h.local, idemtest.Table{Name: "bench-hot-processed", HashKey: "pk", TTLAttribute: "expiresAt"}); err != nil {
		return nil, err
	}
	if h.accounts, err = idemtest.CreateTableContext(ctx, h.local, idemtest.Table{Name: "bench-hot-accounts", HashKey: "account"}); err != nil {
		return nil, err
	}
	for _, l := range cfg.lines {
		res.lines = append(res.lines, l.name)
	}
	node := cfg.powertools
	if node {
		if res.ptSkipped, err = readyNode(ctx, cfg.ptDir); err != nil {
			return nil, err
		}
		if node = res.ptSkipped == ""; node {
			if h.pt, err = powertoolsTables(ctx, endpoint, "bench-powertools-hot"); err != nil {
				return nil, err
			}
			res.lines = append(res.lines, ptHotName)
		}
	} else {
		res.ptSkipped = "-powertools=false"
	}
	res.runs = make([][]hotRun, len(res.lines))
	for i := range len(cfg.envs) * len(cfg.accounts) {
		envs, accounts := res.config(i)
		for k, l := range cfg.lines {
			run, err := h.runLine(ctx, l, envs, accounts, fmt.Sprintf("hot%d-e%d-a%d", k, envs, accounts))
			if err != nil {
				return nil, fmt.Errorf("hot: %s, %d environments, %d accounts: %w", l.name, envs, accounts, err)
			}
			res.runs[k] = append(res.runs[k], run)
			log.Printf("idem-bench: hot: %s, %d environments, %d accounts: %s", l.name, envs, accounts, run.summary())
		}
		if node {
			run, version, err := h.runPowertools(ctx, envs, accounts, fmt.Sprintf("hotpt-e%d-a%d", envs, accounts))
			if err != nil {
				return nil, fmt.Errorf("hot: Powertools, %d environments, %d accounts: %w", envs, accounts, err)
			}
			res.runs[len(cfg.lines)] = append(res.runs[len(cfg.lines)], run)
			res.ptVersion = version
			log.Printf("idem-bench: hot: Powertools, %d environments, %d accounts: %s", envs, accounts, run.summary())
		}
	}
	return res, nil
}

// runLine runs line l with envs environments crediting accounts accounts.
func (h *hotSection) runLine(ctx context.Context, l hotLine, envs, accounts int, prefix string) (hotRun, error) {
	calls := &idemtest.CallCounter{}
	causes := &hotCauses{}
	delivers := make([]hotDeliver, envs)
	var fold *folder
	msgs := hotMessages(prefix, h.cfg.messages, accounts)
	if l.fold {
		if err := h.entriesTable(ctx); err != nil {
			return hotRun{}, err
		}
		var err error
		if fold, err = h.startFold(ctx, calls, causes, prefix, len(msgs)); err != nil {
			return hotRun{}, err
		}
	}
	for i := range delivers {
		e := hotEnv{client: idemtest.Client(h.proxy.URL, calls.Option), processed: h.processed, accounts: h.accounts, entries: h.entries, causes: causes}
		var err error
		if delivers[i], err = l.env(e); err != nil {
			return hotRun{}, err
		}
	}
	h.proxy.conflicts.take()
	q := newHotQueue(msgs, l.batch)
	if err := q.run(ctx, delivers, h.cfg.deadline); err != nil {
		return hotRun{}, err
	}
	run := q.figures()
	if fold != nil {
		if err := fold.wait(2 * time.Minute); err != nil {
			return hotRun{}, err
		}
		fold.apply(&run, q)
	}
	run.envs, run.accounts, run.tally, run.causes = envs, accounts, h.proxy.conflicts.take(), causes.counts()
	run.ops = map[string]int{}
	for _, op := range countedOps {
		if n := calls.Count(op); n > 0 {
			run.ops[op] = n
		}
	}
	run.calls = calls.Count("") - calls.Count("DescribeTable")
	var err error
	run.doubles, run.lost, err = checkCredits(ctx, h.local, h.accounts, prefix, h.cfg.messages, accounts)
	return run, err
}

// hotMessages are a run's messages: message i credits 1 cent to account
// i mod accounts, so the messages spread evenly.
func hotMessages(prefix string, n, accounts int) []message {
	out := make([]message, n)
	for i := range out {
		out[i] = message{id: fmt.Sprintf("%s-%d", prefix, i), account: hotAccount(prefix, i%accounts), cents: 1}
	}
	return out
}

func hotAccount(prefix string, j int) string { return fmt.Sprintf("%s-acc-%d", prefix, j) }

// checkCredits compares each account's balance with its messages: the
// credits beyond them (double) and short of them (lost), exactly.
func checkCredits(ctx context.Context, c *dynamodb.Client, table, prefix string, n, accounts int) (doubles, lost int, err error) {
	bal, err := balances(ctx, c, table)
	if err != nil {
		return 0, 0, err
	}
	for j := range accounts {
		want := n / accounts
		if j < n%accounts {
			want++
		}
		got := bal[hotAccount(prefix, j)]
		doubles += max(0, got-want)
		lost += max(0, want-got)
	}
	return doubles, lost, nil
}

// summary is a run's line in the log.
func (h hotRun) summary() string {
	return fmt.Sprintf("%.1f credits/s, %.2f calls per credit, %d deliveries failed, %d double, %d lost, in %.1f s",
		h.creditsPerSec(), h.callsPerCredit(), h.failed, h.doubles, h.lost, h.wall.Seconds())
}

func (h hotRun) creditsPerSec() float64 {
	return float64(h.messages) / max(h.wall.Seconds(), 1e-9)
}

func (h hotRun) callsPerCredit() float64 { return float64(h.calls) / float64(max(h.messages, 1)) }

// parseHotEnvs reads -hotenvs: environments, comma-separated.
func parseHotEnvs(s string) ([]int, error) {
	var out []int
	for f := range strings.SplitSeq(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			return nil, fmt.Errorf("-hotenvs: %q is not a number of environments (1 or more); give them comma-separated, as 1,8,64", f)
		}
		if slices.Contains(out, n) {
			return nil, fmt.Errorf("-hotenvs: %d twice", n)
		}
		out = append(out, n)
	}
	return out, nil
}
