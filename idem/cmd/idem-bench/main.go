// Command idem-bench runs this kit side by side with check-then-act, the
// two-phase lock and a bare UpdateItem on one local DynamoDB endpoint and
// prints one table (and writes it as Markdown with -out).
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"time"

	"github.com/idemkit/kit/idem"
	"github.com/idemkit/kit/idem/idemtest"
	"github.com/idemkit/kit/idem/localdynamo"
)

func main() {
	var (
		latN   = flag.Int("latency", 300, "messages timed for latency, each delivered twice")
		tpN    = flag.Int("throughput", 1000, "messages for the throughput run, each delivered 3 times")
		faultN = flag.Int("faults", 100, "messages for the crash-window and race columns")
		out    = flag.String("out", "", "also write the table as Markdown to this file")
	)
	flag.Parse()
	log.SetFlags(0)
	ctx := context.Background()
	endpoint := idemtest.ExternalEndpoint()
	if endpoint == "" {
		srv, err := localdynamo.Start(ctx)
		if err != nil {
			log.Fatal(err)
		}
		defer srv.Stop()
		endpoint = srv.Endpoint
	}
	rows, err := run(ctx, endpoint, *latN, *tpN, *faultN)
	if err != nil {
		log.Fatal(err)
	}
	table := markdown(rows, endpoint, *latN, *tpN, *faultN)
	fmt.Print(table)
	if *out != "" {
		if err := os.WriteFile(*out, []byte(table), 0o644); err != nil {
			log.Fatal(err)
		}
	}
}

func run(ctx context.Context, endpoint string, latN, tpN, faultN int) ([]row, error) {
	builders := []struct {
		name  string
		build func(su *setup, processed string) (strategy, error)
	}{
		{"this kit (claim + effect, one transaction)", func(su *setup, processed string) (strategy, error) {
			store, err := idem.New(su.client, processed, func(o *idem.Options) { o.Metrics = io.Discard })
			return &kit{store: store, accounts: su.accounts}, err
		}},
		{"check-then-act (Get, effect, Put)", func(su *setup, processed string) (strategy, error) {
			return &checkThenAct{c: su.client, processed: processed, accounts: su.accounts}, nil
		}},
		{"two-phase lock (Powertools)", func(su *setup, processed string) (strategy, error) {
			return &twoPhase{c: su.client, processed: processed, accounts: su.accounts, now: time.Now}, nil
		}},
		{"bare UpdateItem (floor, no idempotency)", func(su *setup, processed string) (strategy, error) {
			return &bare{c: su.client, accounts: su.accounts}, nil
		}},
	}
	var rows []row
	for i, b := range builders {
		su := setup{calls: &idemtest.CallCounter{}}
		su.client = idemtest.NewClient(endpoint, su.calls.Option)
		processed, err := idemtest.MakeTable(ctx, su.client, idemtest.Table{Name: "bench-processed", HashKey: "pk", TTLAttribute: "expiresAt"})
		if err != nil {
			return nil, err
		}
		if su.accounts, err = idemtest.MakeTable(ctx, su.client, idemtest.Table{Name: "bench-accounts", HashKey: "account"}); err != nil {
			return nil, err
		}
		if su.strategy, err = b.build(&su, processed); err != nil {
			return nil, err
		}
		prefix := fmt.Sprint("s", i)
		r := row{name: b.name, crashMessages: faultN, raceMessages: faultN}
		first, dup, cf, cd, err := latency(ctx, su, prefix, latN)
		if err != nil {
			return nil, fmt.Errorf("%s: latency: %w", b.name, err)
		}
		r.callsFirst, r.callsDup = cf, cd
		r.p50First, r.p99First = percentile(first, 0.5), percentile(first, 0.99)
		r.p50Dup, r.p99Dup = percentile(dup, 0.5), percentile(dup, 0.99)
		r.msgsPerSec = throughput(ctx, batchDeliverer(su, processed), prefix, tpN)
		if r.crashDoubles, err = crashWindow(ctx, su, prefix, faultN); err != nil {
			return nil, fmt.Errorf("%s: crash window: %w", b.name, err)
		}
		if r.raceDoubles, err = race(ctx, su, prefix, faultN); err != nil {
			return nil, fmt.Errorf("%s: race: %w", b.name, err)
		}
		rows = append(rows, r)
		log.Printf("idem-bench: %s done", b.name)
	}
	floor := rows[len(rows)-1].p50First
	for i := range rows {
		rows[i].ratio = float64(rows[i].p50First) / float64(floor)
	}
	return rows, nil
}

// batchDeliverer is how the throughput run hands batches to a strategy.
func batchDeliverer(su setup, processed string) func(context.Context, []message) []message {
	return concurrentBatch(su.strategy)
}

func markdown(rows []row, endpoint string, latN, tpN, faultN int) string {
	ms := func(d time.Duration) string { return fmt.Sprintf("%.2f", float64(d.Microseconds())/1000) }
	s := fmt.Sprintf("Strategies side by side on %s (%s). Latency: %d messages, one client, one at a time; throughput: %d messages × 3 deliveries in batches of 10; crash window and race: %d messages each.\n\n", endpoint, time.Now().UTC().Format(time.DateOnly), latN, tpN, faultN)
	s += fmt.Sprintf("| strategy | calls/first | calls/dup | first p50 ms | first p99 ms | dup p50 ms | dup p99 ms | first p50 / floor | msgs/s (%d×3, batches of 10) | double effects, crash after effect | double effects, concurrent redelivery |\n", tpN)
	s += "|---|---|---|---|---|---|---|---|---|---|---|\n"
	for _, r := range rows {
		s += fmt.Sprintf("| %s | %.2f | %.2f | %s | %s | %s | %s | %.2f× | %.0f | %d of %d | %d of %d |\n",
			r.name, r.callsFirst, r.callsDup, ms(r.p50First), ms(r.p99First), ms(r.p50Dup), ms(r.p99Dup), r.ratio, r.msgsPerSec,
			r.crashDoubles, r.crashMessages, r.raceDoubles, r.raceMessages)
	}
	return s
}
