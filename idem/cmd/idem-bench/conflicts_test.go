package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemkit/kit/idem/idemtest"
)

// conflicted starts a proxy with model m and the conflict model cm in
// front of the local server, and a client through it that sends each
// call once (the SDK would retry a throttled one).
func conflicted(t *testing.T, m string, cm *conflicts) (*modelProxy, *dynamodb.Client) {
	t.Helper()
	mod, err := parseModel("test", []byte(m))
	if err != nil {
		t.Fatal(err)
	}
	p, err := startProxy(mod, idemtest.Endpoint(t), 1, withConflicts(cm))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p, idemtest.Client(p.URL, func(o *dynamodb.Options) { o.RetryMaxAttempts = 1 })
}

// slowTransactions holds a committing transaction long enough for the
// test to meet it; single calls and cancelled transactions answer at
// once.
const slowTransactions = `{"source": "test", "figures": [
	{"operation": "PutItem", "p50Ms": 1, "p99Ms": 1},
	{"operation": "TransactWriteItems", "items": 1, "p50Ms": 1500, "p99Ms": 1500},
	{"operation": "TransactWriteItems", "cancelled": true, "items": 1, "p50Ms": 1, "p99Ms": 1}]}`

func key(name, v string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{name: s(v)}
}

// wireKey is an item's key as the proxy reads it from a request.
func wireKey(name, v string) map[string]json.RawMessage {
	return map[string]json.RawMessage{name: json.RawMessage(fmt.Sprintf(`{"S":%q}`, v))}
}

func credit(table, account string) types.TransactWriteItem {
	return types.TransactWriteItem{Update: creditUpdate(table, message{account: account, cents: 1})}
}

func claimPut(table, id string) types.TransactWriteItem {
	return types.TransactWriteItem{Put: &types.Put{TableName: aws.String(table), Item: key("pk", id)}}
}

// waitHeld waits until a transaction holds the account's item.
func waitHeld(t *testing.T, cm *conflicts, table, account string, done <-chan error) {
	t.Helper()
	for !cm.held(table, wireKey("account", account)) {
		select {
		case err := <-done:
			t.Fatalf("the transaction answered (%v) before the proxy was seen holding %s", err, account)
		case <-time.After(time.Millisecond):
		}
	}
}

func reasons(err error) []string {
	var tce *types.TransactionCanceledException
	if !errors.As(err, &tce) {
		return nil
	}
	var out []string
	for _, r := range tce.CancellationReasons {
		out = append(out, aws.ToString(r.Code))
	}
	return out
}

// TestConflictTransactions: a transaction holds its items until it is
// answered; a second one meeting a held item is cancelled with
// TransactionConflict on that item's index and None on the other, a
// single write of it (UpdateItem, or PutItem of the item, which the model
// names by the table's key schema) gets TransactionConflictException;
// none of them reaches the server. A write of another item, and a read of
// the held one, are served; once the first transaction has answered,
// the same writes succeed. The tally says so.
func TestConflictTransactions(t *testing.T) {
	cm := newConflicts(idemtest.Endpoint(t), partitionUnits, partitionUnits)
	_, c := conflicted(t, slowTransactions, cm)
	claims := idemtest.CreateTable(t, c, idemtest.Table{Name: "conflict-claims", HashKey: "pk"})
	accounts := idemtest.CreateTable(t, c, idemtest.Table{Name: "conflict-accounts", HashKey: "account"})
	ctx := context.Background()
	tx := func(id string) error {
		_, err := c.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{claimPut(claims, id), credit(accounts, "acc")}})
		return err
	}
	done := make(chan error, 1)
	go func() { done <- tx("m-1") }()
	waitHeld(t, cm, accounts, "acc", done)

	if got := reasons(tx("m-2")); len(got) != 2 || got[0] != "None" || got[1] != "TransactionConflict" {
		t.Errorf("a second transaction on the held account: expect reasons [None TransactionConflict], got %v", got)
	}
	var conflict *types.TransactionConflictException
	if _, err := c.UpdateItem(ctx, updateInput(creditUpdate(accounts, message{account: "acc", cents: 1}))); !errors.As(err, &conflict) {
		t.Errorf("an UpdateItem of the held account: expect TransactionConflictException, got %v", err)
	}
	if _, err := c.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(accounts), Item: map[string]types.AttributeValue{"account": s("acc"), "balance": n(100)}}); !errors.As(err, &conflict) {
		t.Errorf("a PutItem of the held account: expect TransactionConflictException, got %v", err)
	}
	if _, err := c.UpdateItem(ctx, updateInput(creditUpdate(accounts, message{account: "other", cents: 1}))); err != nil {
		t.Errorf("an UpdateItem of another account: expect it served, got %v", err)
	}
	if _, err := c.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(accounts), Key: key("account", "acc"), ConsistentRead: aws.Bool(true)}); err != nil {
		t.Errorf("a GetItem of the held account: expect it served (read-committed), got %v", err)
	}
	if err := <-done; err != nil {
		t.Fatalf("the first transaction: %v", err)
	}
	local := idemtest.Client(idemtest.Endpoint(t))
	su := setup{client: local, accounts: accounts}
	if got, err := balance(ctx, su, "acc"); err != nil || got != 1 {
		t.Errorf("after the first transaction: expect balance 1 (nothing refused reached the server), got %d %v", got, err)
	}
	if out, err := local.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(claims), Key: key("pk", "m-2")}); err != nil || out.Item != nil {
		t.Errorf("the refused transaction's claim: expect none written, got %v %v", out.Item, err)
	}
	if err := tx("m-2"); err != nil {
		t.Errorf("the second transaction again, once the first answered: expect it committed, got %v", err)
	}
	if _, err := c.UpdateItem(ctx, updateInput(creditUpdate(accounts, message{account: "acc", cents: 1}))); err != nil {
		t.Errorf("the UpdateItem again: expect it served, got %v", err)
	}
	if got, _ := balance(ctx, su, "acc"); got != 3 {
		t.Errorf("expect balance 3 at the end, got %d", got)
	}
	tally := cm.take()
	for _, tc := range []struct {
		op          string
		kind        answer
		want, items int
	}{
		{"TransactWriteItems", answerOK, 2, 4},
		{"TransactWriteItems", answerConflict, 1, 2},
		{"UpdateItem", answerConflict, 1, 1},
		{"PutItem", answerConflict, 1, 1},
		{"UpdateItem", answerOK, 2, 2},
		{"GetItem, consistent", answerOK, 1, 1},
	} {
		if got, items := tally.count(tc.op, tc.kind), tally.actions[answerKey{tc.op, tc.kind}]; got != tc.want || items != tc.items {
			t.Errorf("tally of %s answered %d: expect %d requests of %d items, got %d of %d", tc.op, tc.kind, tc.want, tc.items, got, items)
		}
	}
	if held, _ := tally.hottest(); held <= 0 {
		t.Errorf("expect the account's held time tallied, got %v", held)
	}
}

// TestConflictSingleWritesHoldNothing: a transaction that meets an
// UpdateItem of its item still under way commits: DynamoDB serializes
// single writes without holding the item.
func TestConflictSingleWritesHoldNothing(t *testing.T) {
	cm := newConflicts(idemtest.Endpoint(t), partitionUnits, partitionUnits)
	p, c := conflicted(t, `{"source": "test", "figures": [
		{"operation": "PutItem", "p50Ms": 1, "p99Ms": 1},
		{"operation": "UpdateItem", "p50Ms": 800, "p99Ms": 800},
		{"operation": "TransactWriteItems", "items": 1, "p50Ms": 1, "p99Ms": 1}]}`, cm)
	accounts := idemtest.CreateTable(t, c, idemtest.Table{Name: "conflict-single", HashKey: "account"})
	claims := idemtest.CreateTable(t, c, idemtest.Table{Name: "conflict-single-claims", HashKey: "pk"})
	var once sync.Once
	served := make(chan struct{}) // the UpdateItem is answered by the server, its answer held back
	p.drawn = func(class string, _ time.Duration) {
		if class == "UpdateItem" {
			once.Do(func() { close(served) })
		}
	}
	ctx := context.Background()
	done := make(chan error, 1)
	go func() {
		_, err := c.UpdateItem(ctx, updateInput(creditUpdate(accounts, message{account: "acc", cents: 1})))
		done <- err
	}()
	<-served
	if _, err := c.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{claimPut(claims, "m-1"), credit(accounts, "acc")}}); err != nil {
		t.Errorf("a transaction beside an UpdateItem of its item: expect it committed, got %v", err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// testClock is a clock the test moves.
type testClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *testClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *testClock) add(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// TestConflictPartitionLimit: a partition's writes past its units are
// throttled and not forwarded: a single write with ThrottlingException
// (reason TableWriteKeyRangeThroughputExceeded), a transaction with
// ThrottlingError on its item of that partition; another partition is
// served; the units come back with time, a transactional write costing 2.
func TestConflictPartitionLimit(t *testing.T) {
	clock := &testClock{now: time.Unix(1_800_000_000, 0)}
	cm := newConflicts(idemtest.Endpoint(t), 10, 4) // 10 units a second, 4 at most at once
	cm.now = clock.Now
	_, c := conflicted(t, `{"source": "test", "figures": [
		{"operation": "PutItem", "p50Ms": 1, "p99Ms": 1},
		{"operation": "TransactWriteItems", "items": 1, "p50Ms": 1, "p99Ms": 1}]}`, cm)
	accounts := idemtest.CreateTable(t, c, idemtest.Table{Name: "conflict-limit", HashKey: "account"})
	claims := idemtest.CreateTable(t, c, idemtest.Table{Name: "conflict-limit-claims", HashKey: "pk"})
	ctx := context.Background()
	update := func(account string) error {
		_, err := c.UpdateItem(ctx, updateInput(creditUpdate(accounts, message{account: account, cents: 1})))
		return err
	}
	for i := range 4 {
		if err := update("a"); err != nil {
			t.Fatalf("write %d of 4 units: %v", i+1, err)
		}
	}
	var th *types.ThrottlingException
	if err := update("a"); !errors.As(err, &th) || len(th.ThrottlingReasons) != 1 || aws.ToString(th.ThrottlingReasons[0].Reason) != "TableWriteKeyRangeThroughputExceeded" {
		t.Errorf("the 5th write in the same instant: expect ThrottlingException, reason TableWriteKeyRangeThroughputExceeded; got %v", err)
	}
	if err := update("b"); err != nil {
		t.Errorf("another account's partition: expect it served, got %v", err)
	}
	tx := func() error {
		_, err := c.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{claimPut(claims, "m-1"), credit(accounts, "a")}})
		return err
	}
	if got := reasons(tx()); len(got) != 2 || got[0] != "None" || got[1] != "ThrottlingError" {
		t.Errorf("a transaction on the spent partition: expect reasons [None ThrottlingError], got %v", got)
	}
	clock.add(200 * time.Millisecond) // 2 units back: a transactional write's
	if err := tx(); err != nil {
		t.Errorf("200 ms later: expect the transaction served, got %v", err)
	}
	if got, _ := balance(ctx, setup{client: idemtest.Client(idemtest.Endpoint(t)), accounts: accounts}, "a"); got != 5 {
		t.Errorf("expect 5 credits applied (4 writes, the transaction; nothing throttled), got %d", got)
	}
	tally := cm.take()
	if tally.count("UpdateItem", answerThrottled) != 1 || tally.count("TransactWriteItems", answerThrottled) != 1 {
		t.Errorf("expect one throttled UpdateItem and one throttled transaction tallied, got %v", tally.answers)
	}
	if _, units := tally.hottest(); units != 6 {
		t.Errorf("expect the busiest partition to have spent 6 units (4 writes, 1 transactional action), got %v", units)
	}
}
