package kafkaconsumer_test

import (
	"context"
	"log/slog"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/idemkit/kit/idem"
	"github.com/idemkit/kit/idem/idemtest"
	"github.com/idemkit/kit/idem/kafkaconsumer"
)

// TestLeaseFailsTheRecordInFlight: under Options.Lease, a record whose
// lease another environment holds is reported failed without running its
// handler, with the rest of its partition; the retry, once the first
// delivery is done, is a Duplicate and the partition goes on.
func TestLeaseFailsTheRecordInFlight(t *testing.T) {
	e := newEnv(t)
	elsewhere, err := idem.New(e.Client, e.Processed, func(o *idem.Options) { o.Logger = slog.New(slog.NewJSONHandler(&e.logs, nil)) })
	if err != nil {
		t.Fatal(err)
	}
	entered, release := make(chan string, 2), make(chan struct{})
	handle := func(ctx context.Context, rec events.KafkaRecord) (idem.Effect, error) {
		if rec.Offset == 1 {
			l, _ := idem.LeaseFromContext(ctx)
			entered <- l.Key
			<-release
		}
		return e.handler(rec)
	}
	leased := func(o *kafkaconsumer.Options) { o.Lease = &idem.LeaseOptions{} }
	h, other := newHandler(t, e.store, handle, leased), newHandler(t, elsewhere, handle, leased)
	first := idemtest.KafkaEvent(rec(0, 1, `{"account":"acc-1","cents":100}`, "evt-1"))
	both := idemtest.KafkaEvent(rec(0, 1, `{"account":"acc-1","cents":100}`, "evt-1"), rec(0, 2, `{"account":"acc-2","cents":5}`, "evt-2"))
	done := make(chan kafkaconsumer.Response)
	go func() { resp, _ := h(context.Background(), first); done <- resp }()
	if key := <-entered; key != "credits#evt-1" {
		t.Errorf("the lease's key: want credits#evt-1, got %q", key)
	}
	resp, _ := other(context.Background(), both)
	checkFailed(t, failed(t, resp), "credits-0@1", "credits-0@2")
	close(release)
	checkFailed(t, failed(t, <-done))
	resp, _ = other(context.Background(), both)
	checkFailed(t, failed(t, resp))
	e.checkBalances(t, map[string]int{"acc-1": 100, "acc-2": 5})
	if !strings.Contains(e.logs.String(), `"outcome":"InFlight"`) {
		t.Errorf("want an InFlight log line, got %s", e.logs.String())
	}
}
