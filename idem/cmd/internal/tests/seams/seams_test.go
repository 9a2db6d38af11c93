package seams_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemkit/kit/idem"
	"github.com/idemkit/kit/idem/idemtest"
	"github.com/idemkit/kit/idem/internal/wire"
	"github.com/idemkit/kit/idem/webhook"
)

const ledgerQueue = "https://sqs.us-east-1.amazonaws.com/123456789012/ledger"

// announce is an effect that credits cents and announces it on the ledger
// queue.
func (w *world) announce(cents int) idem.Handler {
	return func(_ context.Context, m idem.Message) (idem.Effect, error) {
		return idem.Effect{
			Writes:   []types.TransactWriteItem{w.credit("acc-1", cents)},
			Messages: []idem.OutgoingMessage{{Destination: ledgerQueue, Type: "credit.applied", Body: fmt.Sprintf(`{"id":%q,"cents":%d}`, m.ID, cents)}},
		}, nil
	}
}

// TestOutboxIDNamesTheClaim: an outgoing message's id names the claim that
// committed it. A message claimed again after its claim expired, or the
// same id claimed in another table, sends under another id, so that the
// next consumer, which deduplicates on it, applies each.
func TestOutboxIDNamesTheClaim(t *testing.T) {
	ctx := context.Background()
	t.Run("a later claim of an expired key", func(t *testing.T) {
		w := newWorld(t)
		store := w.store(t)
		msg := idem.Message{ID: "k-1", Source: "credits"}
		if _, err := store.Process(ctx, msg, w.announce(100)); err != nil {
			t.Fatal(err)
		}
		first := idemtest.Outbox(t, w.Client, w.Processed)
		w.advance(49 * time.Hour) // retention is 2 days
		if res, err := store.Process(ctx, msg, w.announce(200)); err != nil || res.Outcome != idem.Processed {
			t.Fatalf("49 hours later: want Processed, got %v, %v", res.Outcome, err)
		}
		both := idemtest.Outbox(t, w.Client, w.Processed)
		t.Logf("outbox ids: first claim %s; both claims %s", ids(first), ids(both))
		if len(first) != 1 || len(both) != 2 || both[0].ID == both[1].ID {
			t.Fatalf("want one message per claim under two ids, got %s then %s", ids(first), ids(both))
		}
	})
	t.Run("the same key in two tables", func(t *testing.T) {
		w := newWorld(t)
		other := idemtest.ProcessedTable(t, w.Client)
		a, b := w.store(t), w.storeOn(t, other)
		if _, err := a.Process(ctx, idem.Message{ID: "k-1", Source: "credits", Payload: []byte("a")}, w.announce(100)); err != nil {
			t.Fatal(err)
		}
		if _, err := b.Process(ctx, idem.Message{ID: "k-1", Source: "credits", Payload: []byte("b")}, w.announce(200)); err != nil {
			t.Fatal(err)
		}
		x, y := idemtest.Outbox(t, w.Client, w.Processed), idemtest.Outbox(t, w.Client, other)
		t.Logf("outbox ids: table one %s, table two %s", ids(x), ids(y))
		if len(x) != 1 || len(y) != 1 || x[0].ID == y[0].ID {
			t.Fatalf("want two ids for two tables' messages, got %s and %s", ids(x), ids(y))
		}
	})
}

func ids(ms []idemtest.OutboxMessage) string {
	var s []string
	for _, m := range ms {
		s = append(s, m.ID)
	}
	return "[" + strings.Join(s, " ") + "]"
}

// TestDetailFieldCannotShadowTheKey: encoding/json matches field names
// case-insensitively and keeps the last it reads, so a detail field
// "IdempotencyKey" (a Go struct marshalled without tags) would be read as
// the relay's "idempotencyKey" by a Go consumer: two messages sent, one
// applied. Such a detail is refused before the commit.
func TestDetailFieldCannotShadowTheKey(t *testing.T) {
	type order struct {
		IdempotencyKey string // no tag: marshalled as "IdempotencyKey"
		Cents          int
	}
	body, _ := json.Marshal(order{IdempotencyKey: "order-7", Cents: 5})
	// What a Go consumer keyed as the README suggests reads from the detail
	// the relay would send:
	var got struct {
		Key string `json:"idempotencyKey"`
	}
	if err := json.Unmarshal([]byte(wire.Detail("c0ffee", string(body))), &got); err != nil || got.Key != "order-7" {
		t.Fatalf("the premise: want the body's field to shadow the relay's key, got %q, %v", got.Key, err)
	}
	w := newWorld(t)
	store := w.store(t)
	w.Calls.Reset()
	_, err := store.Process(context.Background(), idem.Message{ID: "o-1", Source: "orders"}, func(context.Context, idem.Message) (idem.Effect, error) {
		return idem.Effect{Messages: []idem.OutgoingMessage{{Destination: "eventbridge:orders", Type: "order.placed", Body: string(body)}}}, nil
	})
	t.Logf("%s: %v; calls %d", body, err, w.Calls.Count(""))
	if !errors.Is(err, idem.ErrInvalid) || !strings.Contains(err.Error(), `"IdempotencyKey"`) || w.Calls.Count("") != 0 {
		t.Fatalf("want an *InvalidError naming the field and no call, got %v after %d calls", err, w.Calls.Count(""))
	}
}

// TestWrapBehindTheRelay: each PutEvents of one outbox message wraps its
// detail in a new envelope (id, time); Wrap keyed on the detail's
// idempotencyKey answers the resend as a Duplicate, not as key reuse.
func TestWrapBehindTheRelay(t *testing.T) {
	w := newWorld(t)
	store := w.store(t)
	key := func(e events.EventBridgeEvent) (string, error) {
		var d struct {
			Key string `json:"idempotencyKey"`
		}
		err := json.Unmarshal(e.Detail, &d)
		return d.Key, err
	}
	handle, err := idem.Wrap(store, key, func(context.Context, events.EventBridgeEvent) (string, idem.Effect, error) {
		return "credited", idem.Effect{Writes: []types.TransactWriteItem{w.credit("acc-1", 100)}}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	detail := json.RawMessage(wire.Detail("c0ffee", `{"cents":100}`))
	first := events.EventBridgeEvent{ID: "e-1", Source: "idemkit.outbox", DetailType: "credit.applied", Time: time.Now(), Detail: detail}
	resend := first
	resend.ID, resend.Time = "e-2", first.Time.Add(3*time.Second)
	// EventBridge may render the detail with other white space: still one.
	resend.Detail = json.RawMessage(strings.ReplaceAll(string(detail), ",", ", "))
	n := w.rec.len()
	for _, e := range []events.EventBridgeEvent{first, resend} {
		if got, err := handle(context.Background(), e); err != nil || got != "credited" {
			t.Fatalf("event %s: want credited, got %q, %v", e.ID, got, err)
		}
	}
	t.Logf("outcomes %v, balance %d", w.rec.since(n), w.Balance(t, "acc-1"))
	if got := w.rec.since(n); len(got) != 2 || got[1] != idem.Duplicate || w.Balance(t, "acc-1") != 100 {
		t.Fatalf("want Processed then Duplicate and 100, got %v and %d", got, w.Balance(t, "acc-1"))
	}
	// Another detail under the key is still key reuse.
	other := first
	other.Detail = json.RawMessage(wire.Detail("c0ffee", `{"cents":999}`))
	if _, err := handle(context.Background(), other); !errors.Is(err, idem.ErrKeyReuse) {
		t.Fatalf("another detail under the key: want key reuse, got %v", err)
	}
}

// TestMuxScopesKeysByRoute: two Receivers at their default Source in one
// Mux; one Idempotency-Key and body sent to both routes are two requests.
func TestMuxScopesKeysByRoute(t *testing.T) {
	w := newWorld(t)
	store := w.store(t)
	answer := func(what string) *webhook.Receiver {
		r, err := webhook.New(store, func(context.Context, webhook.Request) (webhook.Response, idem.Effect, error) {
			return webhook.Response{Body: []byte(what)}, idem.Effect{Writes: []types.TransactWriteItem{w.credit(what, 1)}}, nil
		})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	mux := webhook.Mux{"POST /charges": answer("charge"), "POST /refunds": answer("refund")}
	for _, path := range []string{"/charges", "/refunds", "/refunds"} {
		e := events.APIGatewayV2HTTPRequest{Version: "2.0", RouteKey: "POST " + path, RawPath: path,
			Headers: map[string]string{"idempotency-key": "k-1"}, Body: `{"cents":1}`}
		e.RequestContext.HTTP.Method = "POST"
		resp, err := mux.HandleV2(context.Background(), e)
		t.Logf("%s: %d %s replayed=%q", path, resp.StatusCode, resp.Body, resp.Headers["Idempotent-Replayed"])
		if err != nil || resp.StatusCode != 200 || resp.Body != strings.TrimPrefix(path, "/")[:6] {
			t.Fatalf("%s: want 200 %s, got %d %s", path, path, resp.StatusCode, resp.Body)
		}
	}
	if w.Balance(t, "charge") != 1 || w.Balance(t, "refund") != 1 {
		t.Fatalf("want one charge and one refund, got %d and %d", w.Balance(t, "charge"), w.Balance(t, "refund"))
	}
}

// TestExpiredPendingClaimIsAbsent: a lease-mode delivery that failed
// leaves its claim pending; once retention has passed, a new message under
// the key is processed, in lease mode as in Process.
func TestExpiredPendingClaimIsAbsent(t *testing.T) {
	w := newWorld(t)
	store := w.store(t, func(o *idem.Options) { o.RetentionDays = 3 }) // more than the lease's key lifetime
	ctx := context.Background()
	down := func(context.Context, idem.Message) (idem.Effect, error) {
		return idem.Effect{}, errors.New("payment API down")
	}
	if _, err := store.ProcessLeased(ctx, idem.Message{ID: "k-1", Source: "pay", Payload: []byte("first")}, down); err == nil {
		t.Fatal("want the handler's error")
	}
	w.advance(73 * time.Hour)
	for i, payload := range []string{"another", "another"} {
		res, err := store.ProcessLeased(ctx, idem.Message{ID: "k-1", Source: "pay", Payload: []byte(payload)}, w.announce(100))
		want := map[int]idem.Outcome{0: idem.Processed, 1: idem.Duplicate}[i]
		t.Logf("delivery %d after retention: %v, %v", i, res.Outcome, err)
		if err != nil || res.Outcome != want {
			t.Fatalf("delivery %d after retention: want %s, got %v, %v", i, want, res.Outcome, err)
		}
	}
}

// TestKeyPrefixes: a prefix ends with "#", so prefix "a" and scope "bx"
// cannot read as prefix "ab" and scope "x"; and an outbox item's Put never
// overwrites an item it meets, such as another Store's claim.
func TestKeyPrefixes(t *testing.T) {
	w := newWorld(t)
	ctx := context.Background()
	for _, p := range []string{"a", "ab", "IDEM"} {
		if _, err := idem.New(w.Client, w.Processed, func(o *idem.Options) { o.KeyPrefix = p }); err == nil || !strings.Contains(err.Error(), `end with "#"`) {
			t.Errorf("KeyPrefix %q: want refused, got %v", p, err)
		}
	}
	a := w.store(t, func(o *idem.Options) { o.KeyPrefix, o.Scope = "a#", "bx" })
	b := w.store(t, func(o *idem.Options) { o.KeyPrefix, o.Scope = "ab#", "x" })
	for _, s := range []*idem.Store{a, b} {
		if res, err := s.Process(ctx, idem.Message{ID: "1"}, w.announce(1)); err != nil || res.Outcome != idem.Processed {
			t.Fatalf("want each Store's message Processed, got %v, %v", res.Outcome, err)
		}
	}
	// An unprefixed Store whose scope is another's prefix, and a key a
	// client chose to be that Store's next outbox item's key: its claim
	// stays; the other's commit fails instead of overwriting it.
	victim := w.store(t, func(o *idem.Options) { o.Scope = "x" })
	sender := w.store(t, func(o *idem.Options) { o.KeyPrefix, o.Scope = "x#", "s" })
	// The clock stands still, so the id can be foreseen here (never in
	// production, where a claim's time is its own).
	forged := "#outbox#" + wire.ID(w.Processed, "x#s#m", w.clock(), 0)
	if _, err := victim.Process(ctx, idem.Message{ID: forged, Payload: []byte("v")}, w.announce(5)); err != nil {
		t.Fatal(err)
	}
	_, err := sender.Process(ctx, idem.Message{ID: "m"}, w.announce(7))
	t.Logf("the sender's commit: %v", err)
	if !errors.Is(err, idem.ErrInvalid) || !strings.Contains(err.Error(), "another item's") {
		t.Fatalf("want an *InvalidError naming the key's clash, got %v", err)
	}
	if res, err := victim.Process(ctx, idem.Message{ID: forged, Payload: []byte("v")}, w.announce(5)); err != nil || res.Outcome != idem.Duplicate {
		t.Fatalf("the victim's redelivery: want Duplicate (its claim kept), got %v, %v", res.Outcome, err)
	}
	// And the other way round: a claim that meets an outbox item.
	if _, err := sender.Process(ctx, idem.Message{ID: "m2"}, w.announce(7)); err != nil {
		t.Fatal(err)
	}
	var id string
	for _, m := range idemtest.Outbox(t, w.Client, w.Processed) {
		if m.ClaimKey == "x#s#m2" {
			id = m.ID
		}
	}
	if _, err := victim.Process(ctx, idem.Message{ID: "#outbox#" + id}, w.announce(1)); !errors.Is(err, idem.ErrInvalid) || !strings.Contains(err.Error(), "outbox item") {
		t.Fatalf("a claim on an outbox item's key: want an *InvalidError, got %v", err)
	}
}

// TestHeaderInTwoSpellings: a REST API event can carry one header in two
// spellings with different values; the key is refused, the same way on
// every retry, instead of one value picked by the map's order.
func TestHeaderInTwoSpellings(t *testing.T) {
	w := newWorld(t)
	r, err := webhook.New(w.store(t), func(context.Context, webhook.Request) (webhook.Response, idem.Effect, error) {
		return webhook.Response{}, idem.Effect{Writes: []types.TransactWriteItem{w.credit("acc-1", 1)}}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	statuses := map[int]int{}
	for range 30 {
		e, err := json.Marshal(events.APIGatewayProxyRequest{HTTPMethod: "POST", Path: "/hook", Body: `{}`,
			Headers: map[string]string{"IDEMPOTENCY-KEY": "a", "idempotency-key": "b"}})
		if err != nil {
			t.Fatal(err)
		}
		out, _ := webhook.Mux{"POST /hook": r}.Handle(context.Background(), e)
		resp, _ := out.(events.APIGatewayProxyResponse)
		statuses[resp.StatusCode]++
	}
	t.Logf("30 deliveries: statuses %v, balance %d", statuses, w.Balance(t, "acc-1"))
	if statuses[400] != 30 || w.Balance(t, "acc-1") != 0 {
		t.Fatalf("want 30 × 400 and nothing applied, got %v and %d", statuses, w.Balance(t, "acc-1"))
	}
	if got := (webhook.Header{"IDEMPOTENCY-KEY": "a", "idempotency-key": "b", "Idempotency-Key": "a"}).Get("idempotency-key"); got != "a,a,b" {
		t.Errorf("Get: want the values in the order of their spellings, got %q", got)
	}
}
