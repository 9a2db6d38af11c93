package main

import (
	"context"
	"testing"
	"time"

	"github.com/idemkit/kit/idem"
	"github.com/idemkit/kit/idem/idemtest"
)

// TestStoreOptions: a Store with a sort key, a key prefix, a Scope and its
// own attribute names, in a table shared with another Store's claims; the
// global flags that mirror those options find its claims, its outbox
// messages, and list only its own.
func TestStoreOptions(t *testing.T) {
	shape := func(o *idem.Options) {
		o.Attributes.SortKey, o.SortKeyValue = "sk", "CLAIM"
		o.Attributes.Outcome, o.Attributes.ClaimedAt = "status", "at"
	}
	f := setup(t, shape)
	ours := f.store(time.Time{}, shape, func(o *idem.Options) { o.KeyPrefix, o.Scope = "IDEM#", "billing" })
	other := f.store(time.Time{}, shape, func(o *idem.Options) { o.KeyPrefix = "OTHER#" })
	consume(t, ours, idemtest.SQSMessage("credits", `{"cents":5}`, map[string]string{"IdempotencyKey": "evt_1"}))
	consume(t, other, idemtest.SQSMessage("credits", `{"cents":6}`, map[string]string{"IdempotencyKey": "evt_1"}))
	if _, err := ours.Process(context.Background(), idem.Message{ID: "evt_2", Source: "stripe", Payload: []byte("x")},
		func(context.Context, idem.Message) (idem.Effect, error) { return idem.Effect{}, nil }); err != nil {
		t.Fatal(err)
	}
	global := []string{"-sort-key", "sk", "-sort-key-value", "CLAIM", "-attr", "outcome=status", "-attr", "claimedAt=at", "-prefix", "IDEM#", "-scope", "billing"}

	out, _ := f.mustRun(t, exitOK, append(global, "inspect", "-queue", "credits", "-message-attribute", "IdempotencyKey=evt_1")...)
	contains(t, "inspect", out, "IDEM#billing#evt_1", "Processed", "2 messages sent", `credited {"cents":5}`)

	out, _ = f.mustRun(t, exitOK, append(global, "list")...)
	contains(t, "list", out, "IDEM#billing#evt_1", "IDEM#billing#evt_2", "2 claims")

	// Without the attribute names, the claims read as another Store's: no
	// outcome, so none listed.
	out, _ = f.mustRun(t, exitOK, "-sort-key", "sk", "-sort-key-value", "CLAIM", "list")
	contains(t, "list without -attr", out, "0 claims")
}
