package stream_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemkit/kit/idem"
	"github.com/idemkit/kit/idem/idemtest"
	"github.com/idemkit/kit/idem/stream"
)

// entry is a credit's own item: what a message commits with its claim when
// its account is hotter than one transaction at a time.
type entry struct {
	Entry   string `dynamodbav:"entry"`
	Account string `dynamodbav:"account"`
	Cents   int    `dynamodbav:"cents"`
}

// hot is a test's entries table (with its stream) beside an Env, and the
// aggregate's handler: each entry's cents added to its account's balance.
type hot struct {
	env     *idemtest.Env
	entries string
	reader  *idemtest.StreamReader
}

func newHot(t *testing.T) *hot {
	env := idemtest.NewEnv(t)
	h := &hot{env: env, entries: idemtest.CreateTable(t, env.Client, idemtest.Table{Name: "entries", HashKey: "entry", Stream: true})}
	h.reader = idemtest.NewStreamReader(t, env.Client, h.entries)
	return h
}

// credit commits credit i's entry, claimed under its own key.
func (h *hot) credit(t *testing.T, store *idem.Store, i int, account string) {
	t.Helper()
	_, err := store.Process(context.Background(), idem.Message{ID: fmt.Sprint("credit-", i), Source: "credits"},
		func(context.Context, idem.Message) (idem.Effect, error) {
			w, err := idem.Put(h.entries, entry{Entry: fmt.Sprint("credit-", i), Account: account, Cents: i})
			return idem.Effect{Writes: []types.TransactWriteItem{w}}, err
		})
	if err != nil {
		t.Fatal(err)
	}
}

// add is the aggregate's effect of one entry's record.
func (h *hot) add(_ context.Context, rec events.DynamoDBEventRecord) (idem.Effect, error) {
	img := rec.Change.NewImage
	cents, err := strconv.Atoi(img["cents"].Number())
	if err != nil {
		return idem.Effect{}, err
	}
	w, err := idem.Update(h.env.Accounts, map[string]string{"account": img["account"].String()},
		expression.Add(expression.Name("balance"), expression.Value(cents)))
	return idem.Effect{Writes: []types.TransactWriteItem{w}}, err
}

// TestAggregateAddsEntriesOnce: 60 entries crediting 2 accounts, read from
// the entries table's stream and folded in one batch: one transaction of
// 62 actions (60 claims, each account's sum); the batch handed over again
// commits nothing and costs one transaction, cancelled by its claims.
func TestAggregateAddsEntriesOnce(t *testing.T) {
	h := newHot(t)
	store, err := idem.New(h.env.Client, h.env.Processed)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int64{}
	for i := range 60 {
		account := fmt.Sprint("acc-", i%2)
		h.credit(t, store, i, account)
		want[account] += int64(i)
	}
	handle, err := stream.Aggregate(store, h.add)
	if err != nil {
		t.Fatal(err)
	}
	batch := idemtest.DynamoDBEvent(h.reader.Read(t)...)
	if len(batch.Records) != 60 {
		t.Fatalf("want 60 stream records, got %d", len(batch.Records))
	}
	for d, wantTxs := range []int{1, 1} {
		h.env.Calls.Reset()
		resp, err := handle(context.Background(), batch)
		if err != nil || len(resp.BatchItemFailures) != 0 {
			t.Fatalf("delivery %d: want no failure, got %+v %v", d+1, resp, err)
		}
		if n := h.env.Calls.Count("TransactWriteItems"); n != wantTxs {
			t.Errorf("delivery %d: want %d transaction, got %d", d+1, wantTxs, n)
		}
		for account, cents := range want {
			if got := h.env.Balance(t, account); got != cents {
				t.Errorf("delivery %d, %s: want %d, got %d", d+1, account, cents, got)
			}
		}
	}
}

// TestAggregateReportsTheFirstFailure: a record whose effect fails (or has
// no eventID) is answered as the batch's failure, the first of them in
// the stream's order; every record before it is applied, so Lambda may
// checkpoint them, and the batch retried from it applies the rest once.
func TestAggregateReportsTheFirstFailure(t *testing.T) {
	h := newHot(t)
	store, err := idem.New(h.env.Client, h.env.Processed)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 10 {
		h.credit(t, store, i+1, "acc-1")
	}
	recs := h.reader.Read(t)
	broken := true
	handle, err := stream.Aggregate(store, func(ctx context.Context, rec events.DynamoDBEventRecord) (idem.Effect, error) {
		if broken && rec.EventID == recs[6].EventID {
			return idem.Effect{}, errors.New("not yet")
		}
		return h.add(ctx, rec)
	})
	if err != nil {
		t.Fatal(err)
	}
	batch := idemtest.DynamoDBEvent(slices.Clone(recs)...)
	batch.Records[8].EventID = "" // no key: failed, and later than the 7th
	resp, _ := handle(context.Background(), batch)
	if len(resp.BatchItemFailures) != 1 || resp.BatchItemFailures[0].ItemIdentifier != recs[6].Change.SequenceNumber {
		t.Fatalf("want the 7th record reported, got %+v", resp)
	}
	if got := h.env.Balance(t, "acc-1"); got < 1+2+3+4+5+6 {
		t.Fatalf("want every record before the 7th applied, got a balance of %d", got)
	}
	broken = false
	resp, _ = handle(context.Background(), idemtest.DynamoDBEvent(recs[6:]...))
	if len(resp.BatchItemFailures) != 0 {
		t.Fatalf("the retry: want no failure, got %+v", resp)
	}
	if got := h.env.Balance(t, "acc-1"); got != 55 {
		t.Errorf("want each entry applied once (55), got %d", got)
	}
}
