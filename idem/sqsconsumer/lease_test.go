package sqsconsumer_test

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/idemkit/kit/idem"
	"github.com/idemkit/kit/idem/idemtest"
	"github.com/idemkit/kit/idem/sqsconsumer"
)

// TestLeaseFailsTheRecordInFlight: under Options.Lease, the same message
// in two batches at once: in another environment (another Store, another
// process), the second meets the lease and is reported failed without
// running its handler; in the same process, it waits for the first and
// is its Duplicate. Either way the retry is a Duplicate.
func TestLeaseFailsTheRecordInFlight(t *testing.T) {
	e := newEnv(t)
	elsewhere, err := idem.New(e.Client, e.Processed, func(o *idem.Options) { o.Logger = slog.New(slog.NewJSONHandler(&e.logs, nil)) })
	if err != nil {
		t.Fatal(err)
	}
	entered, release := make(chan string, 2), make(chan struct{})
	handle := func(ctx context.Context, rec events.SQSMessage) (idem.Effect, error) {
		l, _ := idem.LeaseFromContext(ctx)
		entered <- l.Key
		<-release
		return e.handler(rec)
	}
	leased := func(o *sqsconsumer.Options) { o.Lease = &idem.LeaseOptions{} }
	h, other := newHandler(t, e.store, handle, leased), newHandler(t, elsewhere, handle, leased)
	rec := events.SQSMessage{MessageId: "m-1", EventSourceARN: queueARN, Body: `{"account":"acc-1","cents":100}`}
	ev := events.SQSEvent{Records: []events.SQSMessage{rec}}
	first, again := make(chan events.SQSEventResponse), make(chan events.SQSEventResponse)
	go func() { resp, _ := h(context.Background(), ev); first <- resp }()
	if key := <-entered; key != "credits#m-1" {
		t.Errorf("the lease's key: want credits#m-1, got %q", key)
	}
	resp, _ := other(context.Background(), ev)
	if len(resp.BatchItemFailures) != 1 || resp.BatchItemFailures[0].ItemIdentifier != "m-1" {
		t.Errorf("in flight elsewhere: want m-1 failed, got %+v", resp)
	}
	go func() { resp, _ := h(context.Background(), ev); again <- resp }() // in flight here: waits
	close(release)
	for what, c := range map[string]chan events.SQSEventResponse{"first": first, "in flight here": again} {
		if resp := <-c; len(resp.BatchItemFailures) != 0 {
			t.Errorf("%s: want no failures, got %+v", what, resp)
		}
	}
	if resp, _ := other(context.Background(), ev); len(resp.BatchItemFailures) != 0 {
		t.Errorf("the retry: want a Duplicate, got %+v", resp)
	}
	if got := e.Balance(t, "acc-1"); got != 100 || len(e.runs.ids) != 1 {
		t.Errorf("want balance 100 and one handler run, got %d and %v", got, e.runs.ids)
	}
	if !strings.Contains(e.logs.String(), `"outcome":"InFlight"`) {
		t.Errorf("want an InFlight log line, got %s", e.logs.String())
	}
}

// TestLeaseEndsBeforeTheDeadline: the lease ends DeadlineMargin/2 before
// the invoke's deadline, never after.
func TestLeaseEndsBeforeTheDeadline(t *testing.T) {
	e := newEnv(t)
	var until time.Time
	h := newHandler(t, e.store, func(ctx context.Context, rec events.SQSMessage) (idem.Effect, error) {
		l, _ := idem.LeaseFromContext(ctx)
		until = l.Until
		return e.handler(rec)
	}, func(o *sqsconsumer.Options) { o.Lease = &idem.LeaseOptions{Duration: time.Hour} })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	deadline, _ := ctx.Deadline()
	h(ctx, events.SQSEvent{Records: []events.SQSMessage{{MessageId: "m-1", EventSourceARN: queueARN, Body: `{"account":"acc-1","cents":1}`}}})
	if want := deadline.Add(-time.Second); until.IsZero() || until.After(want) {
		t.Errorf("want the lease to end by %v, got %v", want, until)
	}
}

// TestLeaseContentionIsInFlight: a record whose lease meets
// TransactionConflictException through every retry is failed for
// redelivery and counted InFlight, not Failed: another environment was
// writing its claim.
func TestLeaseContentionIsInFlight(t *testing.T) {
	e := newEnv(t)
	faults := &idemtest.Faults{Rates: map[idemtest.FaultKind]float64{idemtest.FaultReplicatedConflict: 1}, Operations: []string{"UpdateItem"}}
	store, err := idem.New(idemtest.Client(idemtest.Endpoint(t), faults.Option), e.Processed, func(o *idem.Options) {
		o.MaxAttempts = 2
		o.Logger = slog.New(slog.NewJSONHandler(&e.logs, nil))
	})
	if err != nil {
		t.Fatal(err)
	}
	h := newHandler(t, store, func(_ context.Context, rec events.SQSMessage) (idem.Effect, error) { return e.handler(rec) },
		func(o *sqsconsumer.Options) { o.Lease = &idem.LeaseOptions{} })
	rec := events.SQSMessage{MessageId: "m-1", EventSourceARN: queueARN, Body: `{"account":"acc-1","cents":100}`}
	// The invoke's deadline, as Lambda puts it on ctx: contention is
	// retried until the record's deadline (DeadlineMargin/2 before it)
	// less its reserve, then given up. Without one the Store retries for
	// 30 seconds of wall time.
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Second)
	defer cancel()
	resp, _ := h(ctx, events.SQSEvent{Records: []events.SQSMessage{rec}})
	if len(resp.BatchItemFailures) != 1 {
		t.Errorf("want m-1 failed for redelivery, got %+v", resp)
	}
	if !strings.Contains(e.logs.String(), `"outcome":"InFlight"`) || strings.Contains(e.logs.String(), `"outcome":"Failed"`) {
		t.Errorf("want the record logged InFlight, not Failed: %s", e.logs.String())
	}
}
