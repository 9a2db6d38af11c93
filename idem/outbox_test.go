package idem_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemkit/kit/idem"
	"github.com/idemkit/kit/idem/idemtest"
)

const ledgerQueue = "https://sqs.us-east-1.amazonaws.com/123456789012/ledger"

// TestOutboxCommitsWithTheEffect: an effect's messages are written in its
// transaction, under ids its redeliveries share, and a duplicate, a
// handler error or a recorded rejection writes none.
func TestOutboxCommitsWithTheEffect(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	credit := func(cents int, rejected bool) idem.Handler {
		return func(_ context.Context, m idem.Message) (idem.Effect, error) {
			w := e.credit("acc-1", cents)
			if rejected { // a condition that fails: the account is never this rich
				w, _ = idem.Update(e.accounts, map[string]string{"account": "acc-1"}, expression.Add(expression.Name("balance"), expression.Value(cents)),
					expression.Name("balance").GreaterThan(expression.Value(1<<40)))
			}
			return idem.Effect{
				Writes: []types.TransactWriteItem{w},
				Messages: []idem.OutgoingMessage{
					{Destination: ledgerQueue, Type: "credit.applied", Body: fmt.Sprintf(`{"id":%q,"cents":%d}`, m.ID, cents), Attributes: map[string]string{"account": "acc-1"}},
					{Destination: "eventbridge:ledger-bus", Type: "credit.applied", Body: `{"cents":1}`},
				},
				Rejected: func(*idem.RejectedError) ([]byte, error) { return []byte("rejected"), nil },
			}, nil
		}
	}
	msg := idem.Message{ID: "m-1", Source: "outbox"}
	for i := range 3 {
		res, err := e.store.Process(ctx, msg, credit(100, false))
		if err != nil {
			t.Fatalf("delivery %d: %v", i, err)
		}
		if want := map[bool]idem.Outcome{true: idem.Processed, false: idem.Duplicate}[i == 0]; res.Outcome != want {
			t.Fatalf("delivery %d: want %s, got %s", i, want, res.Outcome)
		}
	}
	sent := idemtest.Outbox(t, e.client, e.processed)
	if len(sent) != 2 {
		t.Fatalf("want 2 outbox items after 3 deliveries, got %d", len(sent))
	}
	key := "outbox#m-1"
	for i, dest := range []string{ledgerQueue, "eventbridge:ledger-bus"} {
		m := sent[i]
		if m.Index != i || m.Destination != dest || len(m.ID) != 32 {
			t.Errorf("item %d: index %d, destination %q, id %q; want index %d, destination %q, 32 hex digits", i, m.Index, m.Destination, m.ID, i, dest)
		}
		if m.ClaimKey != key || m.GroupID != key || m.Type != "credit.applied" {
			t.Errorf("item %d: claimKey %q, groupId %q, type %q", i, m.ClaimKey, m.GroupID, m.Type)
		}
		if _, ok := idemtest.OutboxItems(t, e.client, e.processed)[m.ID]["expiresAt"].(*types.AttributeValueMemberN); !ok {
			t.Errorf("item %d has no expiresAt for TTL", i)
		}
	}
	if sent[0].ID == sent[1].ID {
		t.Errorf("two messages of one effect under one id %s", sent[0].ID)
	}
	if sent[0].Attributes["account"] != "acc-1" {
		t.Errorf("item 0's attributes: %v", sent[0].Attributes)
	}
	if got := e.balance(t, "acc-1"); got != 100 {
		t.Errorf("balance %d, want 100", got)
	}

	// A handler error, then a rejection recorded: no message.
	failing := func(context.Context, idem.Message) (idem.Effect, error) {
		return idem.Effect{Messages: []idem.OutgoingMessage{{Destination: ledgerQueue, Body: "x"}}}, errors.New("down")
	}
	var he *idem.HandlerError
	if _, err := e.store.Process(ctx, idem.Message{ID: "m-2", Source: "outbox"}, failing); !errors.As(err, &he) {
		t.Fatalf("want a *HandlerError, got %v", err)
	}
	res, err := e.store.Process(ctx, idem.Message{ID: "m-3", Source: "outbox"}, credit(5, true))
	if err != nil || res.Outcome != idem.Rejected {
		t.Fatalf("want Rejected, got %v, %v", res.Outcome, err)
	}
	if n := len(idemtest.OutboxItems(t, e.client, e.processed)); n != 2 {
		t.Errorf("want still 2 outbox items, got %d", n)
	}
}

// TestOutboxOwnTable: Options.OutboxTable takes the messages, the claims
// table only claims; the batch mode and the lease mode write them too.
func TestOutboxOwnTable(t *testing.T) {
	te := idemtest.NewEnv(t)
	outbox := idemtest.CreateTable(t, te.Client, idemtest.Table{Name: "outbox", HashKey: "pk", TTLAttribute: "expiresAt"})
	store, err := idem.New(te.Client, te.Processed, func(o *idem.Options) { o.OutboxTable = outbox })
	if err != nil {
		t.Fatal(err)
	}
	h := func(_ context.Context, m idem.Message) (idem.Effect, error) {
		return idem.Effect{Messages: []idem.OutgoingMessage{{Destination: ledgerQueue, Body: m.ID}}}, nil
	}
	ctx := context.Background()
	if _, err := store.Process(ctx, idem.Message{ID: "p", Source: "own"}, h); err != nil {
		t.Fatal(err)
	}
	if _, err := store.ProcessLeased(ctx, idem.Message{ID: "l", Source: "own"}, h); err != nil {
		t.Fatal(err)
	}
	batch := []idem.Message{{ID: "b1", Source: "own"}, {ID: "b2", Source: "own"}}
	bh := func(ctx context.Context, _ int, m idem.Message) (idem.Effect, error) { return h(ctx, m) }
	te.Calls.Reset()
	for i, r := range store.ProcessBatch(ctx, batch, bh) {
		if r.Err != nil {
			t.Fatalf("batch entry %d: %v", i, r.Err)
		}
	}
	// The outbox table's key schema is the claims table's, so the batch
	// packer tells its items apart: one transaction for both entries.
	if n := te.Calls.Count("TransactWriteItems"); n != 1 {
		t.Errorf("batch of 2 with a message each: want 1 transaction, got %d", n)
	}
	sent := idemtest.Outbox(t, te.Client, outbox)
	for i, id := range []string{"b1", "b2", "l", "p"} {
		if i >= len(sent) || sent[i].ClaimKey != "own#"+id || sent[i].Body != id {
			t.Errorf("message of %s: %+v", id, sent)
		}
	}
	if len(sent) != 4 || te.Claims(t) != 4 || len(idemtest.Outbox(t, te.Client, te.Processed)) != 0 {
		t.Errorf("want 4 outbox items and 4 claims, got %d and %d", len(sent), te.Claims(t))
	}
}

// TestOutboxRefusesBadMessages: each refused with its reason, nothing sent.
func TestOutboxRefusesBadMessages(t *testing.T) {
	e := newEnv(t)
	many := make(map[string]string)
	for i := range 9 {
		many[fmt.Sprint("a", i)] = "v"
	}
	tooManyWrites := make([]types.TransactWriteItem, 98)
	for i := range tooManyWrites {
		tooManyWrites[i] = e.credit(fmt.Sprint("acc-", i), 1)
	}
	ok := idem.OutgoingMessage{Destination: ledgerQueue, Body: "b"}
	cases := []struct {
		name   string
		eff    idem.Effect
		reason string
	}{
		{"no destination", idem.Effect{Messages: []idem.OutgoingMessage{{Body: "b"}}}, "no Destination"},
		{"not a destination", idem.Effect{Messages: []idem.OutgoingMessage{{Destination: "ledger", Body: "b"}}}, "neither an SQS queue URL"},
		{"no bus", idem.Effect{Messages: []idem.OutgoingMessage{{Destination: "eventbridge:", Type: "t", Body: "{}"}}}, "names no event bus"},
		{"event without type", idem.Effect{Messages: []idem.OutgoingMessage{{Destination: "eventbridge:b", Body: "{}"}}}, "needs a Type"},
		{"event detail not an object", idem.Effect{Messages: []idem.OutgoingMessage{{Destination: "eventbridge:b", Type: "t", Body: "[1]"}}}, "JSON object"},
		{"event detail not JSON", idem.Effect{Messages: []idem.OutgoingMessage{{Destination: "eventbridge:b", Type: "t", Body: "{oops"}}}, "JSON object"},
		{"event detail with the relay's field", idem.Effect{Messages: []idem.OutgoingMessage{{Destination: "eventbridge:b", Type: "t", Body: `{"idempotencyKey":"x"}`}}}, "the relay adds"},
		// encoding/json matches names case-insensitively (and folds the
		// Kelvin sign K to k): each would shadow the relay's key for a Go
		// consumer.
		{"event detail with IdempotencyKey", idem.Effect{Messages: []idem.OutgoingMessage{{Destination: "eventbridge:b", Type: "t", Body: `{"n":1,"IdempotencyKey":"order-7"}`}}}, `"IdempotencyKey" field`},
		{"event detail with IDEMPOTENCYKEY", idem.Effect{Messages: []idem.OutgoingMessage{{Destination: "eventbridge:b", Type: "t", Body: `{"IDEMPOTENCYKEY":"order-7"}`}}}, "a Go decoder takes"},
		{"event detail with an escaped I", idem.Effect{Messages: []idem.OutgoingMessage{{Destination: "eventbridge:b", Type: "t", Body: `{"\u0049dempotencyKey":"order-7"}`}}}, "a Go decoder takes"},
		{"event detail with a Kelvin sign", idem.Effect{Messages: []idem.OutgoingMessage{{Destination: "eventbridge:b", Type: "t", Body: "{\"idempotency\u212aey\":\"order-7\"}"}}}, "a Go decoder takes"},
		{"event detail blank", idem.Effect{Messages: []idem.OutgoingMessage{{Destination: "eventbridge:b", Type: "t", Body: "   "}}}, "JSON object"},
		{"empty body", idem.Effect{Messages: []idem.OutgoingMessage{{Destination: ledgerQueue}}}, "empty Body"},
		{"body too large", idem.Effect{Messages: []idem.OutgoingMessage{{Destination: ledgerQueue, Body: strings.Repeat("x", 256<<10)}}}, "the limit is"},
		{"body and attributes too large", idem.Effect{Messages: []idem.OutgoingMessage{{Destination: ledgerQueue, Body: strings.Repeat("x", 200<<10), Attributes: map[string]string{"big": strings.Repeat("y", 100<<10)}}}}, "with its attributes"},
		{"body not UTF-8", idem.Effect{Messages: []idem.OutgoingMessage{{Destination: ledgerQueue, Body: "\xff"}}}, "not valid UTF-8"},
		{"body with a control character", idem.Effect{Messages: []idem.OutgoingMessage{{Destination: ledgerQueue, Body: "a\x01b"}}}, "SQS refuses"},
		{"body with U+FFFE", idem.Effect{Messages: []idem.OutgoingMessage{{Destination: ledgerQueue, Body: "a\uFFFEb"}}}, "SQS refuses"},
		{"not a queue URL", idem.Effect{Messages: []idem.OutgoingMessage{{Destination: "https://example.com/not-a-queue", Body: "b"}}}, "neither an SQS queue URL"},
		{"attribute name with a space", idem.Effect{Messages: []idem.OutgoingMessage{{Destination: ledgerQueue, Body: "b", Attributes: map[string]string{"has space": "v"}}}}, "attribute name"},
		{"attribute name AWS.", idem.Effect{Messages: []idem.OutgoingMessage{{Destination: ledgerQueue, Body: "b", Attributes: map[string]string{"AWS.trace": "v"}}}}, "attribute name"},
		{"attribute value not UTF-8", idem.Effect{Messages: []idem.OutgoingMessage{{Destination: ledgerQueue, Body: "b", Attributes: map[string]string{"a": "\xff"}}}}, "its value"},
		{"too many attributes", idem.Effect{Messages: []idem.OutgoingMessage{{Destination: ledgerQueue, Body: "b", Attributes: many}}}, "9 Attributes"},
		{"reserved attribute", idem.Effect{Messages: []idem.OutgoingMessage{{Destination: ledgerQueue, Body: "b", Attributes: map[string]string{"idempotencykey": "k"}}}}, "the relay's own"},
		{"empty attribute value", idem.Effect{Messages: []idem.OutgoingMessage{{Destination: ledgerQueue, Body: "b", Attributes: map[string]string{"a": ""}}}}, "its value"},
		{"empty attribute name", idem.Effect{Messages: []idem.OutgoingMessage{{Destination: ledgerQueue, Body: "b", Attributes: map[string]string{"": "v"}}}}, "attribute name"},
		{"100 actions", idem.Effect{Writes: tooManyWrites, Messages: []idem.OutgoingMessage{ok, ok}}, "98 effect writes, 2 outgoing messages and the claim are 101 actions"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e.calls.Reset()
			_, err := e.store.Process(context.Background(), idem.Message{ID: c.name, Source: "bad"}, func(context.Context, idem.Message) (idem.Effect, error) { return c.eff, nil })
			var ie *idem.InvalidError
			if !errors.As(err, &ie) || !strings.Contains(err.Error(), c.reason) {
				t.Fatalf("want an *InvalidError saying %q, got %v", c.reason, err)
			}
			if n := e.calls.Count(""); n != 0 {
				t.Errorf("want no call, got %d", n)
			}
		})
	}
}
