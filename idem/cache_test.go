package idem_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemkit/kit/idem"
)

// TestCacheAnswersDuplicatesWithoutACall: with Options.CacheSize, a
// redelivery to the same Store costs no call, key reuse is still refused,
// a claim past its expiry goes to DynamoDB again, and the oldest entry
// leaves when the cache is full.
func TestCacheAnswersDuplicatesWithoutACall(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	e := newEnv(t, func(o *idem.Options) {
		o.CacheSize, o.RetentionDays = 2, 1
		o.Now = func() time.Time { return now }
	})
	ctx := context.Background()
	msg := func(id, payload string) idem.Message {
		return idem.Message{ID: id, Source: "cached", Payload: []byte(payload)}
	}
	deliver := func(m idem.Message) (idem.Result, int, error) {
		t.Helper()
		e.calls.Reset()
		res, err := e.store.Process(ctx, m, e.creditHandler(nil))
		return res, e.calls.Count("TransactWriteItems") + e.calls.Count("GetItem"), err
	}
	for _, step := range []struct {
		name    string
		msg     idem.Message
		advance time.Duration
		want    string // outcome, or the error's kind
		cached  bool
		calls   int
	}{
		{"first delivery", msg("a", "1"), 0, "Processed", false, 1},
		{"redelivery", msg("a", "1"), 0, "Duplicate", true, 0},
		{"redelivery again", msg("a", "1"), 0, "Duplicate", true, 0},
		{"the key with another payload", msg("a", "2"), 0, "KeyReuse", false, 0},
		{"a second message", msg("b", "1"), 0, "Processed", false, 1},
		{"a third: the cache holds two", msg("c", "1"), 0, "Processed", false, 1},
		{"b, still cached", msg("b", "1"), 0, "Duplicate", true, 0},
		{"a, evicted: DynamoDB answers", msg("a", "1"), 0, "Duplicate", false, 1},
		{"a, cached again", msg("a", "1"), 0, "Duplicate", true, 0},
		{"a, past its expiry: a first delivery again", msg("a", "1"), 25 * time.Hour, "Processed", false, 1},
	} {
		t.Run(step.name, func(t *testing.T) {
			now = now.Add(step.advance)
			res, calls, err := deliver(step.msg)
			got := string(res.Outcome)
			if errors.Is(err, idem.ErrKeyReuse) {
				got = "KeyReuse"
			} else if err != nil {
				t.Fatal(err)
			}
			if got != step.want || res.Cached != step.cached || calls != step.calls {
				t.Errorf("want %s (cached %v, %d call(s)), got %s (cached %v, %d call(s))", step.want, step.cached, step.calls, got, res.Cached, calls)
			}
		})
	}
	if got := e.balance(t, "acc-9"); got != 2000 {
		t.Errorf("balance: want 2000 (a twice, 24 h apart, b and c), got %d", got)
	}
}

// TestCacheInBatches: ProcessBatch answers cached claims without a call,
// and caches what it commits.
func TestCacheInBatches(t *testing.T) {
	e := newEnv(t, func(o *idem.Options) { o.CacheSize = 100 })
	ctx := context.Background()
	var batch []idem.Message
	for i := range 5 {
		batch = append(batch, idem.Message{ID: fmt.Sprint("m", i), Source: "cached", Payload: []byte{byte(i)}})
	}
	h := func(_ context.Context, i int, _ idem.Message) (idem.Effect, error) {
		return idem.Effect{Writes: []types.TransactWriteItem{e.credit(fmt.Sprint("acc-", i), 1)}}, nil
	}
	for round, want := range []struct {
		outcome idem.Outcome
		calls   int
	}{{idem.Processed, 1}, {idem.Duplicate, 0}} {
		e.calls.Reset()
		for i, r := range e.store.ProcessBatch(ctx, batch, h) {
			if r.Err != nil || r.Result.Outcome != want.outcome || r.Result.Cached != (round == 1) {
				t.Errorf("round %d, message %d: want %s, got %+v", round, i, want.outcome, r)
			}
		}
		if n := e.calls.Count("TransactWriteItems"); n != want.calls {
			t.Errorf("round %d: want %d call(s), got %d", round, want.calls, n)
		}
	}
	// A Store of its own, as another environment: not cached there.
	other, err := idem.New(e.client, e.processed, func(o *idem.Options) { o.CacheSize = 100 })
	if err != nil {
		t.Fatal(err)
	}
	res, err := other.Process(ctx, batch[0], e.creditHandler(nil))
	if err != nil || res.Outcome != idem.Duplicate || res.Cached {
		t.Errorf("another Store: want an uncached Duplicate, got %+v %v", res, err)
	}
}

// TestCacheKeepsItsOwnBytes: a caller that changes a replayed response does
// not change what the next cached duplicate replays.
func TestCacheKeepsItsOwnBytes(t *testing.T) {
	e := newEnv(t, func(o *idem.Options) { o.CacheSize = 10 })
	ctx := context.Background()
	m := idem.Message{ID: "b", Source: "cached"}
	res, err := e.store.Process(ctx, m, e.creditHandler(nil))
	if err != nil {
		t.Fatal(err)
	}
	copy(res.Record.Response, "XXXXXXXX")
	for range 2 {
		dup, err := e.store.Process(ctx, m, e.creditHandler(nil))
		if err != nil || !dup.Cached || string(dup.Record.Response) != "credited b" {
			t.Fatalf("want the cached %q, got %q (cached %v, %v)", "credited b", dup.Record.Response, dup.Cached, err)
		}
		copy(dup.Record.Response, "YYYYYYYY")
	}
}
