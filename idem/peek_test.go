package idem_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemkit/kit/idem"
	"github.com/idemkit/kit/idem/idemtest"
)

// calls is what one delivery cost: its outcome and error, and its calls.
type calls struct {
	outcome   idem.Outcome
	err       error
	gets, txs int
}

// deliverCounted delivers msg through store and counts its calls in e.calls
// (store's client must count into it).
func (e *env) deliverCounted(store *idem.Store, msg idem.Message) calls {
	e.calls.Reset()
	res, err := store.Process(context.Background(), msg, e.creditHandler(nil))
	return calls{res.Outcome, err, e.calls.Count("GetItem"), e.calls.Count("TransactWriteItems")}
}

// TestADuplicateCostsOneCall: every message delivered three times to one
// environment, nobody counting deliveries (Store.Process with no
// Attempt). The redeliveries of a key this environment saw settled read
// their claim and send no transaction; a first delivery sends its
// transaction alone; a key reuse is found by the read, as the claim's
// condition would find it. With ReadFirstAbove negative every delivery
// goes straight to its transaction. Never a read and a transaction for
// one duplicate.
func TestADuplicateCostsOneCall(t *testing.T) {
	for _, tc := range []struct {
		name  string
		above float64
		dup   calls // a redelivery of a message processed here
		first calls // a message never seen
		reuse calls // a processed message's id with another payload
	}{
		{"the default", 0, calls{idem.Duplicate, nil, 1, 0}, calls{idem.Processed, nil, 0, 1}, calls{"", idem.ErrKeyReuse, 1, 0}},
		{"never read first", -1, calls{idem.Duplicate, nil, 0, 1}, calls{idem.Processed, nil, 0, 1}, calls{"", idem.ErrKeyReuse, 0, 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, func(o *idem.Options) { o.ReadFirstAbove = tc.above })
			msg := func(id, payload string) idem.Message {
				return idem.Message{ID: id, Source: "resends", Payload: []byte(payload)}
			}
			for i := range 12 {
				for range 3 {
					if got := e.deliverCounted(e.store, msg(fmt.Sprint("m-", i), "p")); got.err != nil {
						t.Fatal(got.err)
					}
				}
			}
			for _, c := range []struct {
				what string
				msg  idem.Message
				want calls
			}{
				{"a redelivery", msg("m-0", "p"), tc.dup},
				{"a first delivery", msg("new", "p"), tc.first},
				{"a key reuse", msg("m-1", "another"), tc.reuse},
			} {
				got := e.deliverCounted(e.store, c.msg)
				if got.outcome != c.want.outcome || !errors.Is(got.err, c.want.err) || got.gets != c.want.gets || got.txs != c.want.txs {
					t.Errorf("%s: want %q %v with %d GetItem and %d transactions, got %q %v with %d and %d",
						c.what, c.want.outcome, c.want.err, c.want.gets, c.want.txs, got.outcome, got.err, got.gets, got.txs)
				}
			}
			if got := e.balance(t, "acc-9"); got != 13*500 {
				t.Errorf("balance: want %d, got %d", 13*500, got)
			}
		})
	}
}

// TestResendsAcrossEnvironments: one sender's resends, uncounted, spread
// over four environments, so that most deliveries reach an environment
// that never saw their key: once that class of deliveries is mostly
// duplicates, a duplicate is answered by its read alone and a first
// delivery pays its read and its transaction, one after the other. A
// delivery never pays a read and a cancelled transaction.
func TestResendsAcrossEnvironments(t *testing.T) {
	e := newEnv(t)
	stores := make([]*idem.Store, 4)
	for i := range stores {
		s, err := idem.New(idemtest.Client(idemtest.Endpoint(t), e.calls.Option), e.processed, func(o *idem.Options) { o.WritesInOneRegion = true })
		if err != nil {
			t.Fatal(err)
		}
		stores[i] = s
	}
	msg := func(id string) idem.Message { return idem.Message{ID: id, Source: "relay", Payload: []byte("p")} }
	var both int
	for i := range 24 { // each message three times, each time to another environment
		for d := range 3 {
			got := e.deliverCounted(stores[(i+d)%len(stores)], msg(fmt.Sprint("m-", i)))
			if got.err != nil {
				t.Fatal(got.err)
			}
			if got.outcome == idem.Duplicate && got.gets+got.txs != 1 {
				t.Errorf("m-%d, delivery %d: a duplicate with %d GetItem and %d transactions, want one call", i, d+1, got.gets, got.txs)
			}
			if got.gets > 0 && got.txs > 0 {
				both++
			}
		}
	}
	if both == 0 {
		t.Error("no first delivery read its claim first: the deliveries new to each environment never passed ReadFirstAbove")
	}
	got := e.deliverCounted(stores[1], msg("m-4")) // m-4 went to environments 0, 1 and 2: settled here
	if got.outcome != idem.Duplicate || got.gets != 1 || got.txs != 0 {
		t.Errorf("a redelivery to an environment that settled it: want Duplicate for one GetItem, got %q %v with %d and %d", got.outcome, got.err, got.gets, got.txs)
	}
	got = e.deliverCounted(stores[3], msg("new"))
	if got.outcome != idem.Processed || got.gets != 1 || got.txs != 1 {
		t.Errorf("a first delivery among resends: want Processed for a GetItem and a transaction, got %q %v with %d and %d", got.outcome, got.err, got.gets, got.txs)
	}
	if got := e.balance(t, "acc-9"); got != 25*500 {
		t.Errorf("balance: want %d, got %d", 25*500, got)
	}
}

// TestReadFirstOnlyWhenDuplicatesAreMany: a sender whose deliveries are
// all first deliveries makes no read.
func TestReadFirstOnlyWhenDuplicatesAreMany(t *testing.T) {
	e := newEnv(t)
	for i := range 20 {
		got := e.deliverCounted(e.store, idem.Message{ID: fmt.Sprint("m-", i), Source: "calm"})
		if got.err != nil {
			t.Fatal(got.err)
		}
		if got.gets != 0 {
			t.Fatalf("delivery %d: want no GetItem, got %d", i, got.gets)
		}
	}
}

// TestRedeliveriesReadFirstDeliveriesDoNot: when the sender counts its
// deliveries (Message.Attempt, SQS's receive count), a redelivery reads
// its claim first and a first attempt goes straight to its transaction,
// in an environment that never saw the key; in one that settled it, every
// delivery of the key reads first, whatever its count (a producer's
// resend of a message processed here).
func TestRedeliveriesReadFirstDeliveriesDoNot(t *testing.T) {
	e := newEnv(t)
	msg := func(id string, attempt int) idem.Message {
		return idem.Message{ID: id, Source: "queue", Payload: []byte("p"), Attempt: attempt}
	}
	for i := range 12 { // a redelivery storm: each message received 3 times
		for attempt := 1; attempt <= 3; attempt++ {
			if got := e.deliverCounted(e.store, msg(fmt.Sprint("m-", i), attempt)); got.err != nil {
				t.Fatal(got.err)
			}
		}
	}
	other, err := idem.New(idemtest.Client(idemtest.Endpoint(t), e.calls.Option), e.processed, func(o *idem.Options) { o.WritesInOneRegion = true })
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		store *idem.Store
		msg   idem.Message
		want  calls
	}{
		{"a first attempt", e.store, msg("new", 1), calls{idem.Processed, nil, 0, 1}},
		{"a producer's resend of a message settled here", e.store, msg("m-1", 1), calls{idem.Duplicate, nil, 1, 0}},
		{"an uncounted resend of a message settled here", e.store, msg("m-2", 0), calls{idem.Duplicate, nil, 1, 0}},
		{"elsewhere, a redelivery", other, msg("m-0", 2), calls{idem.Duplicate, nil, 1, 0}},
		{"elsewhere, a fourth receive, a redelivery too", other, msg("m-3", 4), calls{idem.Duplicate, nil, 1, 0}},
		{"elsewhere, a producer's resend counted as a first attempt", other, msg("m-5", 1), calls{idem.Duplicate, nil, 0, 1}},
		{"elsewhere, a count below 1, not counted", other, msg("m-6", -1), calls{idem.Duplicate, nil, 0, 1}},
		{"elsewhere, a redelivery of a message never committed", other, msg("late", 2), calls{idem.Processed, nil, 1, 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := e.deliverCounted(tc.store, tc.msg)
			if got != tc.want {
				t.Errorf("want %v with %d GetItem and %d transactions, got %v %v with %d and %d", tc.want.outcome, tc.want.gets, tc.want.txs, got.outcome, got.err, got.gets, got.txs)
			}
		})
	}
}

// TestAForgottenClaimIsProcessedAgain: a claim deleted by hand (idem
// forget, to have its message processed again) whose redelivery reaches
// the environment that settled it: the read finds nothing, the
// transaction commits, and the effect is applied again, once.
func TestAForgottenClaimIsProcessedAgain(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	msg := idem.Message{ID: "m-0", Source: "forgotten", Payload: []byte("p")}
	for range 2 {
		if got := e.deliverCounted(e.store, msg); got.err != nil {
			t.Fatal(got.err)
		}
	}
	if _, err := e.client.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: &e.processed,
		Key: map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: "forgotten#m-0"}}}); err != nil {
		t.Fatal(err)
	}
	got := e.deliverCounted(e.store, msg)
	if got.outcome != idem.Processed || got.gets != 1 || got.txs != 1 {
		t.Errorf("want Processed after a read that found nothing, got %q %v with %d GetItem and %d transactions", got.outcome, got.err, got.gets, got.txs)
	}
	if got := e.balance(t, "acc-9"); got != 2*500 {
		t.Errorf("balance: want %d, got %d", 2*500, got)
	}
}
