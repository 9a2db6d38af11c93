package main

// Powertools for TypeScript in the hot-item section: bench.js's hot mode
// runs one (environments, accounts) at a time through the section's proxy,
// its workers taking messages from a queue of its own with the Go
// queue's rules (hotqueue.go).

import (
	"context"
	"strconv"
)

// ptHot is bench.js's figures for one hot run.
type ptHot struct {
	WallMs   float64        `json:"wallMs"`
	CreditMs []float64      `json:"creditMs"`
	Failed   int            `json:"failed"`
	Causes   map[string]int `json:"causes"`
	Calls    map[string]int `json:"calls"` // by operation, "PutItem"
}

// runPowertools has bench.js credit accounts accounts from envs workers,
// and checks the balances.
func (h *hotSection) runPowertools(ctx context.Context, envs, accounts int, prefix string) (hotRun, string, error) {
	var out struct {
		Versions map[string]string `json:"versions"`
		Hot      ptHot             `json:"hot"`
	}
	h.proxy.conflicts.take()
	err := runBenchJS(ctx, h.cfg.ptDir, []server{{"hot", h.proxy.URL}}, h.pt, &out,
		"IDEM_BENCH_HOT_MESSAGES="+strconv.Itoa(h.cfg.messages),
		"IDEM_BENCH_HOT_ENVIRONMENTS="+strconv.Itoa(envs),
		"IDEM_BENCH_HOT_ACCOUNTS="+strconv.Itoa(accounts),
		"IDEM_BENCH_HOT_PREFIX="+prefix,
		"IDEM_BENCH_HOT_DEADLINE_MS="+strconv.FormatInt(h.cfg.deadline.Milliseconds(), 10),
		"IDEM_BENCH_HOT_MAX_RECEIVES="+strconv.Itoa(hotMaxReceives),
	)
	tally := h.proxy.conflicts.take()
	if err != nil {
		return hotRun{}, "", err
	}
	run := hotRun{envs: envs, accounts: accounts, messages: h.cfg.messages, wall: msDuration(out.Hot.WallMs),
		failed: out.Hot.Failed, causes: out.Hot.Causes, ops: out.Hot.Calls, tally: tally}
	for _, ms := range out.Hot.CreditMs {
		run.credit = append(run.credit, msDuration(ms))
	}
	for _, c := range out.Hot.Calls {
		run.calls += c
	}
	run.doubles, run.lost, err = checkCredits(ctx, h.local, h.pt.accounts, prefix, h.cfg.messages, accounts)
	return run, out.Versions["@aws-lambda-powertools/idempotency"], err
}
