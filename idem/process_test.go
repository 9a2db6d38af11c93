package idem_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemkit/kit/idem"
	"github.com/idemkit/kit/idem/idemtest"
)

func TestMain(m *testing.M) { idemtest.Main(m) }

// env is one test's tables and a Store over them.
type env struct {
	client    *dynamodb.Client
	calls     *idemtest.CallCounter
	processed string
	accounts  string
	store     *idem.Store
}

func newEnv(t *testing.T, optFns ...func(*idem.Options)) *env {
	t.Helper()
	te := idemtest.NewEnv(t, optFns...)
	e := &env{client: te.Client, calls: te.Calls, processed: te.Processed, accounts: te.Accounts}
	quiet := func(o *idem.Options) {}
	store, err := idem.New(e.client, e.processed, append([]func(*idem.Options){quiet}, optFns...)...)
	if err != nil {
		t.Fatal(err)
	}
	e.store = store
	return e
}

func (e *env) credit(account string, cents int) types.TransactWriteItem {
	w, err := idem.Update(e.accounts, map[string]string{"account": account}, expression.Add(expression.Name("balance"), expression.Value(cents)))
	if err != nil {
		panic(err) // a constant expression: a mistake in the test
	}
	return w
}

// creditHandler credits acc-9 with 500 cents and answers "credited".
func (e *env) creditHandler(runs *atomic.Int64) idem.Handler {
	return func(ctx context.Context, m idem.Message) (idem.Effect, error) {
		if runs != nil {
			runs.Add(1)
		}
		return idem.Effect{Writes: []types.TransactWriteItem{e.credit("acc-9", 500)}, Response: []byte("credited " + m.ID)}, nil
	}
}

func (e *env) balance(t *testing.T, account string) int {
	t.Helper()
	return int(idemtest.Number(t, e.client, e.accounts, "account", account, "balance"))
}

func (e *env) claimCount(t *testing.T) int {
	t.Helper()
	return idemtest.ItemCount(t, e.client, e.processed)
}

var msg = idem.Message{ID: "evt_001", Source: "credits", Payload: []byte(`{"id":"evt_001","account":"acc-9","cents":500}`)}

func TestFirstDeliveryAppliesAndRedeliveriesReplay(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	var runs atomic.Int64
	first, err := e.store.Process(ctx, msg, e.creditHandler(&runs))
	if err != nil {
		t.Fatal(err)
	}
	if first.Outcome != idem.Processed {
		t.Fatalf("first delivery: want Processed, got %s", first.Outcome)
	}
	// The Store's first claim reads the table's description once (its
	// replicas: Options.WritesInOneRegion), then the one transaction.
	if tx, d, all := e.calls.Count("TransactWriteItems"), e.calls.Count("DescribeTable"), e.calls.Count(""); tx != 1 || d != 1 || all != 2 {
		t.Errorf("first delivery: want 1 TransactWriteItems and the cold start's 1 DescribeTable, got %d, %d of %d calls", tx, d, all)
	}
	for i := range 5 {
		e.calls.Reset()
		res, err := e.store.Process(ctx, msg, e.creditHandler(&runs))
		if err != nil {
			t.Fatalf("redelivery %d: %v", i, err)
		}
		if res.Outcome != idem.Duplicate {
			t.Errorf("redelivery %d: want Duplicate, got %s", i, res.Outcome)
		}
		if string(res.Record.Response) != "credited evt_001" {
			t.Errorf("redelivery %d: want stored response %q, got %q", i, "credited evt_001", res.Record.Response)
		}
		if !res.Record.ClaimedAt.Equal(first.Record.ClaimedAt) || res.Record.Fingerprint != first.Record.Fingerprint {
			t.Errorf("redelivery %d: stored record %+v differs from the claim %+v", i, res.Record, first.Record)
		}
		if got := e.calls.Count(""); got != 1 {
			t.Errorf("redelivery %d: want 1 DynamoDB call, got %d", i, got)
		}
	}
	if got := e.balance(t, "acc-9"); got != 500 {
		t.Errorf("balance: want 500, got %d", got)
	}
}

func TestConcurrentDeliveriesApplyOnce(t *testing.T) {
	e := newEnv(t)
	process := func(ctx context.Context, m idem.Message) (idem.Result, error) {
		return e.store.Process(ctx, m, e.creditHandler(nil))
	}
	outcomes := map[idem.Outcome]int{}
	for _, d := range idemtest.ReplayConcurrently(context.Background(), 50, process, msg) {
		if d.Err != nil {
			t.Fatalf("a delivery failed: %v", d.Err)
		}
		outcomes[d.Response.Outcome]++
	}
	if outcomes[idem.Processed] != 1 || outcomes[idem.Duplicate] != 49 {
		t.Errorf("want 1 Processed and 49 Duplicate, got %v", outcomes)
	}
	if got := e.balance(t, "acc-9"); got != 500 {
		t.Errorf("balance: want 500, got %d", got)
	}
}

func TestFailedHandlerCommitsNothing(t *testing.T) {
	boom := errors.New("boom")
	for _, tc := range []struct {
		name    string
		handler idem.Handler
		check   func(error) bool
	}{
		{"error", func(context.Context, idem.Message) (idem.Effect, error) { return idem.Effect{}, boom }, func(err error) bool {
			var he *idem.HandlerError
			return errors.Is(err, boom) && errors.As(err, &he)
		}},
		{"panic", func(context.Context, idem.Message) (idem.Effect, error) { panic("kaboom") }, func(err error) bool {
			var pe *idem.PanicError
			return errors.As(err, &pe) && pe.Value == "kaboom" && len(pe.Stack) > 0
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			ctx := context.Background()
			_, err := e.store.Process(ctx, msg, tc.handler)
			if !tc.check(err) {
				t.Fatalf("unexpected error %v", err)
			}
			if got := e.calls.Count(""); got != 0 {
				t.Errorf("failed handler made %d DynamoDB calls", got)
			}
			if n := e.claimCount(t); n != 0 {
				t.Errorf("failed handler left %d claim(s)", n)
			}
			res, err := e.store.Process(ctx, msg, e.creditHandler(nil))
			if err != nil || res.Outcome != idem.Processed {
				t.Fatalf("redelivery: want Processed, got %s, %v", res.Outcome, err)
			}
			if got := e.balance(t, "acc-9"); got != 500 {
				t.Errorf("balance: want 500, got %d", got)
			}
		})
	}
}

func TestExpiredRecordIsClaimableAgain(t *testing.T) {
	now := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	e := newEnv(t, func(o *idem.Options) {
		o.RetentionDays = 1
		o.Now = func() time.Time { return now }
	})
	ctx := context.Background()
	if res, err := e.store.Process(ctx, msg, e.creditHandler(nil)); err != nil || res.Outcome != idem.Processed {
		t.Fatalf("first: %s, %v", res.Outcome, err)
	}
	now = now.Add(24 * time.Hour) // expires exactly now: still held
	if res, err := e.store.Process(ctx, msg, e.creditHandler(nil)); err != nil || res.Outcome != idem.Duplicate {
		t.Fatalf("at expiry: want Duplicate, got %s, %v", res.Outcome, err)
	}
	now = now.Add(time.Second) // expired, and the server never deleted it
	if n := e.claimCount(t); n != 1 {
		t.Fatalf("want the expired record still present, got %d records", n)
	}
	// Even another payload: an expired record counts as absent.
	other := msg
	other.Payload = []byte(`{"other":true}`)
	res, err := e.store.Process(ctx, other, e.creditHandler(nil))
	if err != nil || res.Outcome != idem.Processed {
		t.Fatalf("after expiry: want Processed, got %s, %v", res.Outcome, err)
	}
	if got := e.balance(t, "acc-9"); got != 1000 {
		t.Errorf("balance: want 1000, got %d", got)
	}
}

func TestKeyReuse(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	if _, err := e.store.Process(ctx, msg, e.creditHandler(nil)); err != nil {
		t.Fatal(err)
	}
	other := msg
	other.Payload = []byte(`{"id":"evt_001","account":"acc-9","cents":900}`)
	_, err := e.store.Process(ctx, other, e.creditHandler(nil))
	var kr *idem.KeyReuseError
	if !errors.Is(err, idem.ErrKeyReuse) || !errors.As(err, &kr) {
		t.Fatalf("want *KeyReuseError, got %v", err)
	}
	if kr.Fingerprint != idem.Fingerprint(other.Payload) || kr.Stored.Fingerprint != idem.Fingerprint(msg.Payload) {
		t.Errorf("fingerprints: got %s (stored %s)", kr.Fingerprint, kr.Stored.Fingerprint)
	}
	if got := e.balance(t, "acc-9"); got != 500 {
		t.Errorf("balance: want 500, got %d", got)
	}
}

// debit takes cents from account only if the balance covers it.
func (e *env) debit(account string, cents int) types.TransactWriteItem {
	balance := expression.Name("balance")
	w, err := idem.Update(e.accounts, map[string]string{"account": account}, expression.Add(balance, expression.Value(-cents)),
		balance.GreaterThanEqual(expression.Value(cents)))
	if err != nil {
		panic(err)
	}
	w.Update.ReturnValuesOnConditionCheckFailure = types.ReturnValuesOnConditionCheckFailureAllOld
	return w
}

func TestRejectedEffect(t *testing.T) {
	ctx := context.Background()
	t.Run("unrecorded", func(t *testing.T) {
		e := newEnv(t)
		if _, err := e.store.Process(ctx, idem.Message{ID: "seed", Source: "s"}, e.creditHandler(nil)); err != nil {
			t.Fatal(err)
		}
		handler := func(context.Context, idem.Message) (idem.Effect, error) {
			return idem.Effect{Writes: []types.TransactWriteItem{e.credit("acc-1", 1), e.debit("acc-9", 501)}}, nil
		}
		_, err := e.store.Process(ctx, msg, handler)
		var rej *idem.RejectedError
		if !errors.Is(err, idem.ErrRejected) || !errors.As(err, &rej) {
			t.Fatalf("want *RejectedError, got %v", err)
		}
		if rej.Index != 1 || rej.Table != e.accounts {
			t.Errorf("rejection names write %d on %s, want 1 on %s", rej.Index, rej.Table, e.accounts)
		}
		if b, _ := rej.Item["balance"].(*types.AttributeValueMemberN); b == nil || b.Value != "500" {
			t.Errorf("rejection's old item: %v", rej.Item)
		}
		if n := e.claimCount(t); n != 1 { // the seed's claim only
			t.Errorf("want no claim for the rejected message, got %d records", n)
		}
		if got := e.balance(t, "acc-1"); got != 0 {
			t.Errorf("acc-1 credited %d by a rejected transaction", got)
		}
	})
	t.Run("recorded", func(t *testing.T) {
		e := newEnv(t)
		handler := func(context.Context, idem.Message) (idem.Effect, error) {
			return idem.Effect{
				Writes:   []types.TransactWriteItem{e.debit("acc-9", 100)},
				Rejected: func(r *idem.RejectedError) ([]byte, error) { return []byte("insufficient funds"), nil },
			}, nil
		}
		res, err := e.store.Process(ctx, msg, handler)
		if err != nil || res.Outcome != idem.Rejected || res.Rejection == nil {
			t.Fatalf("want Rejected, got %s, %v", res.Outcome, err)
		}
		e.calls.Reset()
		res, err = e.store.Process(ctx, msg, handler)
		if err != nil || res.Outcome != idem.Duplicate || res.Record.Outcome != idem.Rejected || string(res.Record.Response) != "insufficient funds" {
			t.Fatalf("redelivery: want a Duplicate replaying the rejection, got %+v, %v", res, err)
		}
		if got := e.calls.Count(""); got != 1 {
			t.Errorf("redelivery of a rejection: want 1 call, got %d", got)
		}
	})
}

func TestInvalidInputSendsNothing(t *testing.T) {
	e := newEnv(t)
	big := make([]byte, 390<<10)
	bigPut := func(i int) types.TransactWriteItem {
		return types.TransactWriteItem{Put: &types.Put{TableName: aws.String(e.accounts), Item: map[string]types.AttributeValue{
			"account": &types.AttributeValueMemberS{Value: fmt.Sprint("big-", i)}, "blob": &types.AttributeValueMemberB{Value: big},
		}}}
	}
	writes := func(n int, w func(int) types.TransactWriteItem) []types.TransactWriteItem {
		var ws []types.TransactWriteItem
		for i := range n {
			ws = append(ws, w(i))
		}
		return ws
	}
	claimKey := map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: "credits#evt_001"}}
	for _, tc := range []struct {
		name string
		msg  idem.Message
		eff  idem.Effect
		nilH bool
		want string
	}{
		{name: "empty id", msg: idem.Message{Source: "credits"}, want: "empty message id"},
		{name: "id of only white space", msg: idem.Message{ID: " \t\n ", Source: "credits"}, want: "empty message id"},
		{name: "id over 2048 bytes", msg: idem.Message{ID: string(make([]byte, 2049))}, want: "DynamoDB allows 2048"},
		{name: "id not UTF-8", msg: idem.Message{ID: "\xff\xfe"}, want: "not valid UTF-8"},
		{name: "nil handler", msg: msg, nilH: true, want: "nil handler"},
		{name: "100 writes", msg: msg, eff: idem.Effect{Writes: writes(100, func(i int) types.TransactWriteItem { return e.credit(fmt.Sprint("a", i), 1) })}, want: "a transaction allows 100"},
		{name: "two writes on one item", msg: msg, eff: idem.Effect{Writes: []types.TransactWriteItem{e.credit("acc-1", 1), e.debit("acc-1", 1)}}, want: "same item"},
		{name: "put and update on one item", msg: msg, eff: idem.Effect{Writes: []types.TransactWriteItem{e.credit("acc-1", 1), {Put: &types.Put{TableName: aws.String(e.accounts), Item: map[string]types.AttributeValue{"account": &types.AttributeValueMemberS{Value: "acc-1"}}}}}}, want: "same item"},
		{name: "write on the claim record", msg: msg, eff: idem.Effect{Writes: []types.TransactWriteItem{{Delete: &types.Delete{TableName: aws.String(e.processed), Key: claimKey}}}}, want: "claim record itself"},
		{name: "over 4 MB", msg: msg, eff: idem.Effect{Writes: writes(11, bigPut)}, want: "DynamoDB allows 4194304"},
		{name: "item over 400 KB", msg: msg, eff: idem.Effect{Writes: []types.TransactWriteItem{{Put: &types.Put{TableName: aws.String(e.accounts), Item: map[string]types.AttributeValue{"account": &types.AttributeValueMemberS{Value: "x"}, "blob": &types.AttributeValueMemberB{Value: make([]byte, 401<<10)}}}}}}, want: "DynamoDB allows 409600"},
		{name: "response too large", msg: msg, eff: idem.Effect{Response: make([]byte, 64<<10+1)}, want: "MaxResponseBytes"},
		{name: "write without operation", msg: msg, eff: idem.Effect{Writes: []types.TransactWriteItem{{}}}, want: "no operation"},
		{name: "write with two operations", msg: msg, eff: idem.Effect{Writes: []types.TransactWriteItem{{Update: e.credit("a", 1).Update, Delete: &types.Delete{TableName: aws.String(e.accounts), Key: claimKey}}}}, want: "2 operations"},
		{name: "nil attribute value", msg: msg, eff: idem.Effect{Writes: []types.TransactWriteItem{{Delete: &types.Delete{TableName: aws.String(e.accounts), Key: map[string]types.AttributeValue{"account": (*types.AttributeValueMemberS)(nil)}}}}}, want: "is an AttributeValue nil?"},
		{name: "write without table", msg: msg, eff: idem.Effect{Writes: []types.TransactWriteItem{{Delete: &types.Delete{Key: claimKey}}}}, want: "no TableName"},
		{name: "an empty key value", msg: msg, eff: idem.Effect{Writes: []types.TransactWriteItem{e.credit("", 1)}}, want: `key attribute "account" is empty`},
		{name: "a put with an empty key value", msg: msg, eff: idem.Effect{Writes: []types.TransactWriteItem{e.credit("acc-1", 1), {Put: &types.Put{TableName: aws.String(e.accounts), Item: map[string]types.AttributeValue{"account": &types.AttributeValueMemberS{Value: ""}}}}}}, want: "refuses an empty key value"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e.calls.Reset()
			h := func(context.Context, idem.Message) (idem.Effect, error) { return tc.eff, nil }
			if tc.nilH {
				h = nil
			}
			_, err := e.store.Process(context.Background(), tc.msg, h)
			var ie *idem.InvalidError
			if !errors.Is(err, idem.ErrInvalid) || !errors.As(err, &ie) {
				t.Fatalf("want *InvalidError, got %v", err)
			}
			if !contains(err.Error(), tc.want) {
				t.Errorf("error %q does not say %q", err, tc.want)
			}
			if got := e.calls.Count(""); got != 0 {
				t.Errorf("sent %d DynamoDB call(s) for invalid input", got)
			}
		})
	}
	if n := e.claimCount(t); n != 0 {
		t.Errorf("invalid input left %d claim(s)", n)
	}
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }

func TestSingleTableDesign(t *testing.T) {
	e := newEnv(t, func(o *idem.Options) {
		o.Attributes.SortKey = "sk"
		o.KeyPrefix = "IDEM#"
		o.Scope = "payments"
	})
	ctx := context.Background()
	// The credit announces itself through the outbox, whose item shares
	// the claim's table: its key is the claim's sort key with its own
	// partition key.
	credit := e.creditHandler(nil)
	process := func(ctx context.Context, m idem.Message) (idem.Result, error) {
		return e.store.Process(ctx, m, func(ctx context.Context, m idem.Message) (idem.Effect, error) {
			eff, err := credit(ctx, m)
			eff.Messages = []idem.OutgoingMessage{{Destination: ledgerQueue, Body: "credited"}}
			return eff, err
		})
	}
	var got []idem.Outcome
	for _, d := range idemtest.Replay(ctx, 3, process, msg) {
		if d.Err != nil {
			t.Fatal(d.Err)
		}
		got = append(got, d.Response.Outcome)
	}
	if fmt.Sprint(got) != "[Processed Duplicate Duplicate]" {
		t.Fatalf("want 1 Processed and 2 Duplicate, got %v", got)
	}
	out, err := e.client.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(e.processed), Key: map[string]types.AttributeValue{
		"pk": &types.AttributeValueMemberS{Value: "IDEM#payments#evt_001"}, "sk": &types.AttributeValueMemberS{Value: "IDEM"},
	}})
	if err != nil || out.Item == nil {
		t.Fatalf("claim record not at its documented key: %v", err)
	}
	if got := e.balance(t, "acc-9"); got != 500 {
		t.Errorf("balance: want 500, got %d", got)
	}
	scan, err := e.client.Scan(ctx, &dynamodb.ScanInput{TableName: aws.String(e.processed)})
	if err != nil {
		t.Fatal(err)
	}
	var outbox []string
	for _, item := range scan.Items {
		pk, _ := item["pk"].(*types.AttributeValueMemberS)
		sk, _ := item["sk"].(*types.AttributeValueMemberS)
		if pk != nil && strings.HasPrefix(pk.Value, "IDEM##outbox#") && sk != nil && sk.Value == "IDEM" {
			outbox = append(outbox, pk.Value)
		}
	}
	if len(scan.Items) != 2 || len(outbox) != 1 {
		t.Fatalf("want the claim and one outbox item under sort key IDEM, got %d items, outbox %v", len(scan.Items), outbox)
	}
}
