package main

import (
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/idemkit/kit/functions/ledger/internal/ledger"
	"github.com/idemkit/kit/idem"
	"github.com/idemkit/kit/idem/idemtest"
)

func TestMain(m *testing.M) { idemtest.Main(m) }

func readEvent(t *testing.T, name string) []byte {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("..", "..", "events", name))
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

// TestEventsRoundTrip decodes events/sqs-ledger.json into events.SQSEvent,
// refusing fields the type does not have, and expects every member of the
// file back, equal, when the value is encoded again.
func TestEventsRoundTrip(t *testing.T) {
	idemtest.CheckJSONRoundTrip(t, readEvent(t, "sqs-ledger.json"), &events.SQSEvent{})
}

// TestEventInvokesTheFunction runs events/sqs-ledger.json (two credits'
// messages, the first also re-sent by the relay) through the function's
// handler on the local endpoint, twice: two ledger entries.
func TestEventInvokesTheFunction(t *testing.T) {
	e := idemtest.NewEnv(t)
	table := idemtest.CreateTable(t, e.Client, idemtest.Table{Name: "ledger", HashKey: "entry"})
	store, err := idem.New(e.Client, e.Processed, func(o *idem.Options) { o.Logger = slog.New(slog.DiscardHandler) })
	if err != nil {
		t.Fatal(err)
	}
	h, err := ledger.New(store, table)
	if err != nil {
		t.Fatal(err)
	}
	var ev events.SQSEvent
	if err := json.Unmarshal(readEvent(t, "sqs-ledger.json"), &ev); err != nil {
		t.Fatal(err)
	}
	for _, delivery := range []string{"first", "again"} {
		resp, err := h(context.Background(), ev)
		if err != nil || len(resp.BatchItemFailures) != 0 {
			t.Fatalf("%s delivery: want no failure, got %v, %v", delivery, resp.BatchItemFailures, err)
		}
		if n := idemtest.ItemCount(t, e.Client, table); n != 2 {
			t.Errorf("%s delivery: want 2 ledger entries, got %d", delivery, n)
		}
	}
	// The entries are keyed by the outbox ids the relay sent the credits'
	// messages under: the first and third records are one message.
	key := func(i int) string { return *ev.Records[i].MessageAttributes["IdempotencyKey"].StringValue }
	if key(0) != key(2) || key(0) == key(1) {
		t.Fatalf("sqs-ledger.json: want records 0 and 2 under one IdempotencyKey and 1 under another, got %s, %s, %s", key(0), key(1), key(2))
	}
	for key, cents := range map[string]int64{key(0): 500, key(1): 250} {
		if got := idemtest.Number(t, e.Client, table, "entry", key, "cents"); got != cents {
			t.Errorf("entry %s: want %d cents, got %d", key, cents, got)
		}
	}
}
