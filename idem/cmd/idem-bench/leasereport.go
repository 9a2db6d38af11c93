package main

import (
	"fmt"
	"time"
)

// leaseSection writes the lease mode's table beside the one-transaction
// mode's.
func (r report) leaseSection(p func(string, ...any)) {
	lr := r.lease
	if lr == nil {
		return
	}
	p("## Lease mode beside the one-transaction mode\n\n")
	p("The handler calls an external service before its effect can be described: an in-process stand-in for a payment API that answers after %s and deduplicates by key (the same key gets the same receipt), then credits an account with the receipt as its response. ", lr.external)
	p("Under `ProcessLeased` it forwards `Lease.Key`; under `Process` it makes the same call inside its handler with the same claim key, as a handler does without the lease: unsafe, since two deliveries may call at once, but the latency comparison is fair. ")
	p("Latency: %d messages, one client, one at a time, each delivered twice, the modes and servers taking turns. ", lr.latN)
	p("Concurrent duplicates, on the local server (they count calls and effects): %d messages, one after another, each delivered at once from %d goroutines, each its own `Store` (its own environment), each delivering again %s after a retryable failure (`ErrLeaseHeld` among them) until it succeeds, as SQS would; extra calls are the calls the external service received beyond one per message.\n\n", lr.dupN, lr.envs, redeliverAfter)
	p("| mode | calls/first | calls/dup | external calls/first | external calls/dup | extra external calls, concurrent duplicates | double effects, concurrent duplicates | deliveries per message, concurrent duplicates |\n")
	p("|---|---|---|---|---|---|---|---|\n")
	for _, w := range lr.rows {
		extra, doubles, deliveries := "—", "—", "—"
		if w.mode.concurrent {
			extra = fmt.Sprintf("%d for %d messages", w.extraCalls, w.dupMessages)
			doubles = fmt.Sprintf("%d of %d", w.doubles, w.dupMessages)
			deliveries = fmt.Sprintf("%.1f", float64(w.dupCalled)/float64(w.dupMessages))
		}
		p("| %s | %.2f | %.2f | %.2f | %.2f | %s | %s | %s |\n", w.mode.name, w.first[0].calls, w.dup[0].calls, w.first[0].external, w.dup[0].external, extra, doubles, deliveries)
	}
	head, rule := r.latencyHeader("first p50 ms", "first p99 ms", "dup p50 ms", "dup p99 ms")
	p("\n| mode | %s\n|---|%s\n", head, rule)
	for _, w := range lr.rows {
		p("| %s | %s |\n", w.mode.name, sideBySide(4, len(r.servers), func(f, j int) string {
			return ms([]time.Duration{w.first[j].p50, w.first[j].p99, w.dup[j].p50, w.dup[j].p99}[f])
		}))
	}
	p("\nCalls by operation, per message:")
	for i, w := range lr.rows {
		sep := ";"
		if i == len(lr.rows)-1 {
			sep = "."
		}
		p(" %s: first delivery %s, duplicate %s%s", w.mode.name, ops(w.first[0].ops), ops(w.dup[0].ops), sep)
	}
	p(" A one-transaction duplicate runs its handler, and so calls the service again, before its transaction finds the claim; a leased duplicate's `UpdateItem` finds it first. ")
	p("Write cost, by DynamoDB's pricing rather than measured here (the local server reports none): an `UpdateItem` of an item under 1 KB is 1 WRU and each action of a `TransactWriteItems` 2 WRU per KB, so for items under 1 KB the lease's first delivery costs 1 WRU more than the one-transaction mode's 2-action transaction (4 WRU).\n\n")
}

// leaseRows are the lease table's one-transaction, lease and cached lease
// rows; nil when the section did not run.
func (r report) leaseRows() (one, lease, cached *leaseRow) {
	if r.lease == nil {
		return nil, nil, nil
	}
	for i := range r.lease.rows {
		w := &r.lease.rows[i]
		switch {
		case !w.mode.leased:
			one = w
		case w.mode.cacheSize == 0:
			lease = w
		default:
			cached = w
		}
	}
	return one, lease, cached
}

func (r report) leaseTargets() []target {
	one, lease, cached := r.leaseRows()
	if one == nil || lease == nil || cached == nil {
		return nil
	}
	return []target{
		{"lease: first delivery costs 2 calls (the lease's UpdateItem, the commit's TransactWriteItems)",
			fmt.Sprintf("%.2f (%s)", lease.first[0].calls, ops(lease.first[0].ops)), lease.first[0].calls == 2},
		{"lease: duplicate costs 1 call (0 with the claim cache)",
			fmt.Sprintf("%.2f (%.2f with CacheSize 1000)", lease.dup[0].calls, cached.dup[0].calls), lease.dup[0].calls == 1 && cached.dup[0].calls == 0},
		{"lease: concurrent duplicates make 0 extra external calls",
			fmt.Sprintf("%d for %d messages × %d environments (one transaction: %d)", lease.extraCalls, lease.dupMessages, r.lease.envs, one.extraCalls), lease.extraCalls == 0},
		{"0 double effects under concurrent duplicates, lease and one-transaction modes",
			fmt.Sprintf("%d of %d (one transaction: %d)", lease.doubles, lease.dupMessages, one.doubles), lease.doubles == 0 && one.doubles == 0},
	}
}
