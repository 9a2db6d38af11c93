package webhook_test

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/idemkit/kit/idem"
	"github.com/idemkit/kit/idem/idemtest"
	"github.com/idemkit/kit/idem/webhook"
)

// TestLeaseInFlightIs409: under Options.Lease, a delivery whose key is in
// flight in another environment gets 409 Conflict with the lease's
// Retry-After, and no call, on every entry; once the first commits, the
// retry is the replay.
func TestLeaseInFlightIs409(t *testing.T) {
	e := newEnv(t)
	entered, release := make(chan string, 2), make(chan struct{})
	calls := 0
	h := creditHandler(e.Accounts)
	receiver := func(store *idem.Store) *webhook.Receiver {
		r, err := webhook.New(store, func(ctx context.Context, req webhook.Request) (webhook.Response, idem.Effect, error) {
			calls++
			l, _ := idem.LeaseFromContext(ctx)
			entered <- l.Key
			<-release // the call out, in flight
			return h(ctx, req)
		}, func(o *webhook.Options) { o.Lease = &idem.LeaseOptions{Duration: 30 * time.Second} })
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	// The deliveries in flight meet the lease from another environment: in
	// the same process they would wait for the first one instead.
	r, elsewhere := receiver(e.store), receiver(e.newStore(t, e.Client))
	d := delivery{body: creditBody, headers: keyed("k-1")}
	first := make(chan answer)
	go func() { first <- sendV2(t, r, d) }()
	if key := <-entered; key != "webhook#k-1" {
		t.Errorf("the lease's key: want webhook#k-1, got %q", key)
	}
	for _, en := range entries {
		start := time.Now()
		got := en.send(context.Background(), t, elsewhere, d)
		t.Logf("%s, under a live lease elsewhere: %d, Retry-After %q, answered in %v", en.name, got.status, got.headers["Retry-After"], time.Since(start))
		// The lease's 30 s, less the time gone, plus the second a takeover waits for clock skew.
		if ra, _ := strconv.Atoi(got.headers["Retry-After"]); got.status != 409 || ra < 29 || ra > 31 || !strings.Contains(problemDetail(t, got), "still being processed") {
			t.Errorf("%s, while in flight: want 409 with Retry-After 29 to 31, got %d %v %s", en.name, got.status, got.headers, got.body)
		}
	}
	close(release)
	if a := <-first; a.status != 200 {
		t.Fatalf("first delivery: want 200, got %d %s", a.status, a.body)
	}
	if got := sendV2(t, r, d); got.status != 200 || got.headers["Idempotent-Replayed"] != "true" {
		t.Errorf("after the commit: want the replay, got %d %v", got.status, got.headers)
	}
	if calls != 1 || e.Balance(t, "acc-9") != 500 {
		t.Errorf("want 1 handler call and balance 500, got %d and %d", calls, e.Balance(t, "acc-9"))
	}
	var inFlight int
	for _, l := range e.logged(t) {
		if l["outcome"] == string(idem.InFlight) && l["level"] == "INFO" {
			inFlight++
		}
	}
	if inFlight != len(entries) {
		t.Errorf("want %d INFO InFlight lines, got %d in %s", len(entries), inFlight, e.log.String())
	}
}

func TestLeaseOptionsRefused(t *testing.T) {
	e := newEnv(t)
	_, err := webhook.New(e.store, creditHandler(e.Accounts), func(o *webhook.Options) { o.Lease = &idem.LeaseOptions{Duration: time.Millisecond} })
	if err == nil || !strings.Contains(err.Error(), "Options.Lease") {
		t.Errorf("want New to name Options.Lease, got %v", err)
	}
}

// TestLeaseContentionIs503: a lease whose UpdateItem meets
// TransactionConflictException through every retry (another environment
// committing the same delivery at that moment) is answered 503 with
// Retry-After, counted InFlight: never "nothing was applied or recorded",
// which the other environment's commit may have made false.
func TestLeaseContentionIs503(t *testing.T) {
	e := newEnv(t)
	faults := &idemtest.Faults{Rates: map[idemtest.FaultKind]float64{idemtest.FaultTransactionConflict: 1}, Operations: []string{"UpdateItem"}}
	store := e.newStore(t, idemtest.Client(idemtest.Endpoint(t), faults.Option), func(o *idem.Options) { o.MaxAttempts = 2 })
	r, err := webhook.New(store, creditHandler(e.Accounts), func(o *webhook.Options) { o.Lease = &idem.LeaseOptions{} })
	if err != nil {
		t.Fatal(err)
	}
	// The invoke's deadline, as Lambda puts it on ctx: contention is
	// retried until the deadline's reserve, then answered. Without one
	// the Store retries for 30 seconds of wall time.
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	resp, err := r.HandleV2(ctx, delivery{body: creditBody, headers: keyed("k-1")}.v2())
	if err != nil {
		t.Fatalf("HandleV2 returned an error: %v", err)
	}
	got := decodeAnswer(t, resp.StatusCode, resp.Headers, resp.Body, resp.IsBase64Encoded)
	if got.status != 503 || got.headers["Retry-After"] == "" || strings.Contains(got.body, "nothing was applied") {
		t.Errorf("want 503 with Retry-After, not a claim that nothing was applied; got %d %v %s", got.status, got.headers, got.body)
	}
	if !strings.Contains(e.log.String(), `"outcome":"InFlight"`) {
		t.Errorf("want the delivery logged InFlight, got %s", e.log.String())
	}
}
