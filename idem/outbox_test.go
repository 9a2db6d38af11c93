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

func str(item map[string]types.AttributeValue, name string) string {
	if v, ok := item[name].(*types.AttributeValueMemberS); ok {
		return v.Value
	}
	return ""
}

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
				Rejected: func(*idem.RejectedError) []byte { return []byte("rejected") },
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
	items := idemtest.OutboxItems(t, e.client, e.processed)
	if len(items) != 2 {
		t.Fatalf("want 2 outbox items after 3 deliveries, got %d", len(items))
	}
	key := "outbox#m-1"
	for i, dest := range []string{ledgerQueue, "eventbridge:ledger-bus"} {
		it, ok := items[idem.OutboxID(key, i)]
		if !ok {
			t.Fatalf("no item under OutboxID(%q, %d)", key, i)
		}
		if got := str(it, idem.OutboxDestinationAttr); got != dest {
			t.Errorf("item %d: destination %q, want %q", i, got, dest)
		}
		if str(it, idem.OutboxClaimAttr) != key || str(it, idem.OutboxGroupAttr) != key || str(it, idem.OutboxTypeAttr) != "credit.applied" {
			t.Errorf("item %d: claimKey %q, groupId %q, type %q", i, str(it, idem.OutboxClaimAttr), str(it, idem.OutboxGroupAttr), str(it, idem.OutboxTypeAttr))
		}
		if _, ok := it["expiresAt"].(*types.AttributeValueMemberN); !ok {
			t.Errorf("item %d has no expiresAt for TTL", i)
		}
	}
	if a, ok := items[idem.OutboxID(key, 0)][idem.OutboxAttributesAttr].(*types.AttributeValueMemberM); !ok || a.Value["account"].(*types.AttributeValueMemberS).Value != "acc-1" {
		t.Errorf("item 0's attributes: %#v", items[idem.OutboxID(key, 0)][idem.OutboxAttributesAttr])
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

// TestOutboxIDs: the same for a key and index, distinct otherwise.
func TestOutboxIDs(t *testing.T) {
	seen := map[string]string{}
	for _, key := range []string{"a#1", "a#10", "b#1", "a#1\x001"} {
		for i := range 12 {
			id := idem.OutboxID(key, i)
			if len(id) != 32 || id != idem.OutboxID(key, i) {
				t.Fatalf("OutboxID(%q, %d) = %q: want 32 hex digits, stable", key, i, id)
			}
			if prev, ok := seen[id]; ok {
				t.Fatalf("OutboxID(%q, %d) = OutboxID of %s", key, i, prev)
			}
			seen[id] = fmt.Sprintf("(%q, %d)", key, i)
		}
	}
}

// TestOutboxOwnTable: Options.OutboxTable takes the messages, the claims
// table only claims; the batch mode and the lease mode write them too.
func TestOutboxOwnTable(t *testing.T) {
	te := idemtest.NewEnv(t)
	outbox := idemtest.CreateTable(t, te.Client, idemtest.Table{Name: "outbox", HashKey: idem.DefaultAttributes.Key, TTLAttribute: idem.DefaultAttributes.ExpiresAt})
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
	items := idemtest.OutboxItems(t, te.Client, outbox)
	for _, id := range []string{"p", "l", "b1", "b2"} {
		it, ok := items[idem.OutboxID("own#"+id, 0)]
		if !ok || str(it, idem.OutboxBodyAttr) != id {
			t.Errorf("message of %s: %v", id, it)
		}
	}
	if len(items) != 4 || te.Claims(t) != 4 {
		t.Errorf("want 4 outbox items and 4 claims, got %d and %d", len(items), te.Claims(t))
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
		{"empty body", idem.Effect{Messages: []idem.OutgoingMessage{{Destination: ledgerQueue}}}, "empty Body"},
		{"body too large", idem.Effect{Messages: []idem.OutgoingMessage{{Destination: ledgerQueue, Body: strings.Repeat("x", idem.MaxOutgoingBytes)}}}, "the limit is"},
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
