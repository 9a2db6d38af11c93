package idem_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"

	"github.com/idemkit/kit/idem"
	"github.com/idemkit/kit/idem/idemtest"
)

// spec is one message of a test batch and what its handler does with it.
type spec struct {
	id      string
	account string
	cents   int
	// do is "" to credit the account, "fail" or "panic", "debit" to debit
	// it if it holds that much, "reject" to debit more than the balance, "reject-recorded" to do so with
	// Effect.Rejected set, "4 writes" to credit four accounts, "put" to
	// put the account's item whole.
	do string
}

func (sp spec) msg() idem.Message {
	return idem.Message{ID: sp.id, Source: "credits", Payload: fmt.Appendf(nil, `{"account":%q,"cents":%d}`, sp.account, sp.cents)}
}

func msgs(specs []spec) []idem.Message {
	out := make([]idem.Message, len(specs))
	for i, sp := range specs {
		out[i] = sp.msg()
	}
	return out
}

func (e *env) batchHandler(specs []spec) idem.BatchHandler {
	return func(_ context.Context, i int, m idem.Message) (idem.Effect, error) {
		sp := specs[i]
		credit := idem.Effect{Writes: []types.TransactWriteItem{e.credit(sp.account, sp.cents)}, Response: []byte("credited " + m.ID)}
		switch sp.do {
		case "fail":
			return idem.Effect{}, errors.New("refused")
		case "panic":
			panic("kaboom")
		case "reject", "debit":
			return idem.Effect{Writes: []types.TransactWriteItem{e.debit(sp.account, sp.cents)}}, nil
		case "reject-recorded":
			return idem.Effect{Writes: []types.TransactWriteItem{e.debit(sp.account, sp.cents)}, Rejected: func(*idem.RejectedError) ([]byte, error) { return []byte("insufficient funds"), nil }}, nil
		case "4 writes":
			credit.Writes = nil
			for j := range 4 {
				credit.Writes = append(credit.Writes, e.credit(fmt.Sprint(sp.account, "/", j), sp.cents))
			}
		case "put":
			credit.Writes = []types.TransactWriteItem{{Put: &types.Put{TableName: aws.String(e.accounts), Item: map[string]types.AttributeValue{
				"account": &types.AttributeValueMemberS{Value: sp.account}, "note": &types.AttributeValueMemberS{Value: sp.id},
			}}}}
		}
		return credit, nil
	}
}

// kind names a result the way the tables below want it.
func kind(r idem.BatchResult) string {
	var (
		he *idem.HandlerError
		pe *idem.PanicError
	)
	switch {
	case r.Err == nil:
		return string(r.Result.Outcome)
	case errors.Is(r.Err, idem.ErrKeyReuse):
		return "KeyReuse"
	case errors.Is(r.Err, idem.ErrRejected):
		return "ErrRejected"
	case errors.As(r.Err, &he):
		return "HandlerError"
	case errors.As(r.Err, &pe):
		return "PanicError"
	case errors.Is(r.Err, idem.ErrTableNotFound):
		return "TableNotFound"
	case errors.Is(r.Err, idem.ErrInvalid):
		return "Invalid"
	case errors.Is(r.Err, idem.ErrRetryable):
		return "Retryable"
	}
	return "error: " + r.Err.Error()
}

func batchOf(n int, id func(int) spec) []spec {
	out := make([]spec, n)
	for i := range out {
		out[i] = id(i)
	}
	return out
}

func repeat(s string, n int) []string { return slices.Repeat([]string{s}, n) }

// TestProcessBatch delivers batches one after another and checks each
// message's outcome, the DynamoDB calls per batch, the stored response every
// duplicate gets, and that the balances hold each processed credit once.
func TestProcessBatch(t *testing.T) {
	ten := batchOf(10, func(i int) spec { return spec{id: fmt.Sprint("m", i), account: fmt.Sprint("acc-", i), cents: i + 1} })
	other := func(sp spec) spec { sp.cents += 1000; return sp }
	type delivery struct {
		batch []spec
		want  []string
		calls int
	}
	for _, tc := range []struct {
		name       string
		deliveries []delivery
	}{
		{"new batch: one call", []delivery{{ten, repeat("Processed", 10), 1}}},
		{"redelivered batch: one call", []delivery{
			{ten, repeat("Processed", 10), 1},
			{ten, repeat("Duplicate", 10), 1},
		}},
		{"half redelivered: two calls", []delivery{
			{ten[:5], repeat("Processed", 5), 1},
			{ten, append(repeat("Duplicate", 5), repeat("Processed", 5)...), 2},
		}},
		{"duplicates within the batch: one call", []delivery{
			{[]spec{ten[0], ten[1], ten[0], ten[2], ten[1], ten[0]}, []string{"Processed", "Processed", "Duplicate", "Processed", "Duplicate", "Duplicate"}, 1},
		}},
		{"key reused within the batch", []delivery{
			{[]spec{ten[0], other(ten[0]), ten[1]}, []string{"Processed", "KeyReuse", "Processed"}, 1},
		}},
		{"key reused across batches", []delivery{
			{ten[:1], []string{"Processed"}, 1},
			{[]spec{other(ten[0]), ten[1], ten[0]}, []string{"KeyReuse", "Processed", "Duplicate"}, 2},
		}},
		{"in-batch copy of a stored message", []delivery{
			{ten[:1], []string{"Processed"}, 1},
			{[]spec{ten[0], ten[1], ten[0], other(ten[0])}, []string{"Duplicate", "Processed", "Duplicate", "KeyReuse"}, 2},
		}},
		{"unrecorded rejection", []delivery{
			{[]spec{{id: "seed", account: "acc-r", cents: 5}}, []string{"Processed"}, 1},
			{[]spec{{id: "r1", account: "acc-r", cents: 100, do: "reject"}, ten[1], ten[2]}, []string{"ErrRejected", "Processed", "Processed"}, 2},
		}},
		{"recorded rejection, then replayed", []delivery{
			{[]spec{{id: "r1", account: "acc-r", cents: 100, do: "reject-recorded"}, ten[1]}, []string{"Rejected", "Processed"}, 2},
			{[]spec{{id: "r1", account: "acc-r", cents: 100, do: "reject-recorded"}, ten[1]}, []string{"Duplicate", "Duplicate"}, 1},
		}},
		{"failed handlers and invalid ids commit nothing", []delivery{
			{[]spec{{id: "f", do: "fail"}, {id: "p", do: "panic"}, ten[0], {id: "", account: "acc-x", cents: 1}}, []string{"HandlerError", "PanicError", "Processed", "Invalid"}, 1},
		}},
		{"one account: one transaction, its credits one action", []delivery{
			{batchOf(4, func(i int) spec { return spec{id: fmt.Sprint("s", i), account: "acc-same", cents: 1 << i} }), repeat("Processed", 4), 1},
		}},
		{"one account, one credit a duplicate: the rest sent again, their sum less it", []delivery{
			{batchOf(2, func(i int) spec { return spec{id: fmt.Sprint("s", i), account: "acc-same", cents: 1 << i} }), repeat("Processed", 2), 1},
			{batchOf(4, func(i int) spec { return spec{id: fmt.Sprint("s", i), account: "acc-same", cents: 1 << i} }), []string{"Duplicate", "Duplicate", "Processed", "Processed"}, 2},
		}},
		{"a debit beside credits of its account: a transaction of its own", []delivery{
			{[]spec{{id: "seed", account: "acc-d", cents: 50}, {id: "c1", account: "acc-d", cents: 1}, {id: "c2", account: "acc-d", cents: 2}}, repeat("Processed", 3), 1},
			{[]spec{{id: "c3", account: "acc-d", cents: 4}, {id: "d1", account: "acc-d", cents: 10, do: "debit"}, {id: "c4", account: "acc-d", cents: 8}}, repeat("Processed", 3), 2},
		}},
		{"150 actions: two transactions", []delivery{
			{batchOf(30, func(i int) spec {
				return spec{id: fmt.Sprint("w", i), account: fmt.Sprint("acc-w", i), cents: 1, do: "4 writes"}
			}), repeat("Processed", 30), 2},
		}},
		{"puts on a table no write keys: one transaction, the key from the table's description", []delivery{
			{[]spec{{id: "p1", account: "acc-p1", do: "put"}, {id: "p2", account: "acc-p2", do: "put"}}, []string{"Processed", "Processed"}, 1},
		}},
		{"two puts of one item: two transactions", []delivery{
			{[]spec{{id: "p1", account: "acc-p", do: "put"}, {id: "p2", account: "acc-p", do: "put"}}, []string{"Processed", "Processed"}, 2},
		}},
		{"put and update of one item: two transactions", []delivery{
			{[]spec{{id: "p1", account: "acc-p", do: "put"}, {id: "c1", account: "acc-p", cents: 3}, {id: "c2", account: "acc-q", cents: 3}}, repeat("Processed", 3), 2},
		}},
		{"everything at once: two calls", []delivery{
			{[]spec{ten[0], ten[1], {id: "seed", account: "acc-r", cents: 5}}, repeat("Processed", 3), 1},
			{[]spec{ten[0], ten[3], ten[3], other(ten[1]), {id: "r1", account: "acc-r", cents: 100, do: "reject"}, {id: "f", do: "fail"}, ten[4]},
				[]string{"Duplicate", "Processed", "Duplicate", "KeyReuse", "ErrRejected", "HandlerError", "Processed"}, 2},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			ctx := context.Background()
			want := map[string]int{}         // balances
			responses := map[string]string{} // by id: what a duplicate replays
			for d, dl := range tc.deliveries {
				e.calls.Reset()
				out := e.store.ProcessBatch(ctx, msgs(dl.batch), e.batchHandler(dl.batch))
				got := make([]string, len(out))
				for i, r := range out {
					got[i] = kind(r)
					sp := dl.batch[i]
					switch {
					case got[i] == "Processed" && sp.do == "debit":
						want[sp.account] -= sp.cents
					case got[i] == "Processed" && sp.do == "4 writes":
						for j := range 4 {
							want[fmt.Sprint(sp.account, "/", j)] += sp.cents
						}
					case got[i] == "Processed":
						want[sp.account] += sp.cents
					case got[i] == "Duplicate" && string(r.Result.Record.Response) != responses[sp.id]:
						t.Errorf("delivery %d, %s: duplicate replays %q, want %q", d, sp.id, r.Result.Record.Response, responses[sp.id])
					}
					if got[i] == "Processed" || got[i] == "Rejected" {
						responses[sp.id] = string(r.Result.Record.Response)
					}
				}
				if strings.Join(got, " ") != strings.Join(dl.want, " ") {
					t.Errorf("delivery %d: want %q, got %q", d, dl.want, got)
				}
				if n := e.calls.Count("TransactWriteItems"); n != dl.calls {
					t.Errorf("delivery %d: want %d TransactWriteItems, got %d", d, dl.calls, n)
				}
			}
			for account, cents := range want {
				if got := e.balance(t, account); got != cents {
					t.Errorf("balance of %s: want %d, got %d", account, cents, got)
				}
			}
		})
	}
}

// noDescribe is a client without DescribeTable.
type noDescribe struct{ idem.TransactWriteAPI }

// TestProcessBatchPutsUndescribed: without DescribeTable a batch's Puts on
// a table no other write keys are taken to touch the whole table, one
// delivery a transaction, and still each commits.
func TestProcessBatchPutsUndescribed(t *testing.T) {
	e := newEnv(t)
	store, err := idem.New(noDescribe{e.client}, e.processed)
	if err != nil {
		t.Fatal(err)
	}
	specs := []spec{{id: "u1", account: "acc-u1", do: "put"}, {id: "u2", account: "acc-u2", do: "put"}, {id: "u3", account: "acc-u3", do: "put"}}
	e.calls.Reset()
	for i, r := range store.ProcessBatch(context.Background(), msgs(specs), e.batchHandler(specs)) {
		if kind(r) != "Processed" {
			t.Errorf("%s: want Processed, got %s", specs[i].id, kind(r))
		}
	}
	if n, d := e.calls.Count("TransactWriteItems"), e.calls.Count("DescribeTable"); n != 3 || d != 0 {
		t.Errorf("want 3 TransactWriteItems and no DescribeTable, got %d and %d", n, d)
	}
}

// TestProcessBatchPutsDenied: where DescribeTable is denied, a batch's
// Puts go one message a transaction and commit; the denial is asked once
// and logged once, naming the table.
func TestProcessBatchPutsDenied(t *testing.T) {
	e := newEnv(t)
	d := describeAs{status: 400, code: "AccessDeniedException"}
	client := idemtest.Client(idemtest.Endpoint(t), func(o *dynamodb.Options) { o.HTTPClient = &http.Client{Transport: &d} })
	var logs bytes.Buffer
	store, err := idem.New(client, e.processed, func(o *idem.Options) {
		o.WritesInOneRegion = true // the claims table is not described: only the Puts' table is
		o.Logger = slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelWarn}))
	})
	if err != nil {
		t.Fatal(err)
	}
	for b := range 2 {
		specs := batchOf(3, func(i int) spec {
			return spec{id: fmt.Sprint("d", b, i), account: fmt.Sprint("acc-d", b, i), do: "put"}
		})
		for i, r := range store.ProcessBatch(context.Background(), msgs(specs), e.batchHandler(specs)) {
			if kind(r) != "Processed" {
				t.Errorf("%s: want Processed, got %s", specs[i].id, kind(r))
			}
		}
	}
	if d.calls != 1 {
		t.Errorf("want the denied DescribeTable asked once for two batches, got %d", d.calls)
	}
	if n := strings.Count(logs.String(), "grant dynamodb:DescribeTable"); n != 1 || !strings.Contains(logs.String(), e.accounts) {
		t.Errorf("want one WARN naming %s, got %d in:\n%s", e.accounts, n, logs.String())
	}
}

// TestProcessBatchMatchesProcess runs one mixed batch through ProcessBatch
// and its messages through Process, on two tables: same outcomes, same log
// records and metrics.
func TestProcessBatchMatchesProcess(t *testing.T) {
	batch := []spec{
		{id: "m1", account: "acc-1", cents: 1}, {id: "m2", account: "acc-2", cents: 2}, {id: "m1", account: "acc-1", cents: 1},
		{id: "m2", account: "acc-2", cents: 99}, {id: "r", account: "acc-r", cents: 7, do: "reject"},
		{id: "rr", account: "acc-r", cents: 7, do: "reject-recorded"}, {id: "f", do: "fail"}, {id: "", account: "acc-x", cents: 1},
	}
	run := func(batchMode bool) (kinds []string, logs, metrics []string) {
		e := newEnv(t)
		var logBuf, metricBuf bytes.Buffer
		store, err := idem.New(e.client, e.processed, func(o *idem.Options) {
			o.Observers = []idem.Observer{idemtest.EMF(t, &metricBuf)}
			o.Logger = slog.New(slog.NewJSONHandler(&logBuf, &slog.HandlerOptions{Level: slog.LevelDebug}))
		})
		if err != nil {
			t.Fatal(err)
		}
		h := e.batchHandler(batch)
		if batchMode {
			for _, r := range store.ProcessBatch(context.Background(), msgs(batch), h) {
				kinds = append(kinds, kind(r))
			}
		} else {
			for i, m := range msgs(batch) {
				res, err := store.Process(context.Background(), m, func(ctx context.Context, m idem.Message) (idem.Effect, error) { return h(ctx, i, m) })
				kinds = append(kinds, kind(idem.BatchResult{Result: res, Err: err}))
			}
		}
		for line := range strings.Lines(logBuf.String()) {
			var rec map[string]any
			if err := json.Unmarshal([]byte(line), &rec); err != nil {
				t.Fatalf("log line %q: %v", line, err)
			}
			logs = append(logs, fmt.Sprint(rec["level"], " ", rec["msg"], " ", rec["id"]))
		}
		for line := range strings.Lines(metricBuf.String()) {
			var m map[string]any
			if err := json.Unmarshal([]byte(line), &m); err != nil {
				t.Fatalf("metric line %q: %v", line, err)
			}
			delete(m, "_aws")
			metrics = append(metrics, fmt.Sprint(m))
		}
		return kinds, logs, metrics
	}
	bk, bl, bm := run(true)
	pk, pl, pm := run(false)
	for _, c := range []struct {
		what       string
		batch, one []string
	}{{"outcomes", bk, pk}, {"log records", bl, pl}, {"metrics", bm, pm}} {
		if strings.Join(c.batch, "\n") != strings.Join(c.one, "\n") {
			t.Errorf("%s: ProcessBatch\n%s\nProcess\n%s", c.what, strings.Join(c.batch, "\n"), strings.Join(c.one, "\n"))
		}
	}
}

// TestProcessBatchConcurrentRedelivery hands the same batch to four
// consumers at once, as SQS may after a visibility timeout: each credit
// lands once.
func TestProcessBatchConcurrentRedelivery(t *testing.T) {
	e := newEnv(t)
	batch := batchOf(10, func(i int) spec { return spec{id: fmt.Sprint("m", i), account: fmt.Sprint("acc-", i%3), cents: 1 << i} })
	var (
		mu       sync.Mutex
		outcomes = map[string]int{}
		wg       sync.WaitGroup
		start    = make(chan struct{})
	)
	for range 4 {
		wg.Go(func() {
			<-start
			for _, r := range e.store.ProcessBatch(context.Background(), msgs(batch), e.batchHandler(batch)) {
				mu.Lock()
				outcomes[kind(r)]++
				mu.Unlock()
			}
		})
	}
	close(start)
	wg.Wait()
	if outcomes["Processed"] != 10 || outcomes["Duplicate"] != 30 {
		t.Errorf("want 10 Processed and 30 Duplicate, got %v", outcomes)
	}
	want := map[string]int{}
	for _, sp := range batch {
		want[sp.account] += sp.cents
	}
	for account, cents := range want {
		if got := e.balance(t, account); got != cents {
			t.Errorf("balance of %s: want %d, got %d", account, cents, got)
		}
	}
}

// TestProcessBatchUnderFaults sends batches of 10 through a client whose
// requests are throttled, fail, reset or lose their committed answer, and
// sends every failed message again: each credit lands once.
func TestProcessBatchUnderFaults(t *testing.T) {
	const messages = 100
	faults := &idemtest.Faults{Seed: 11, Rates: map[idemtest.FaultKind]float64{
		idemtest.FaultThrottle: 0.07, idemtest.FaultServerError: 0.07, idemtest.FaultReset: 0.07, idemtest.FaultLostResponse: 0.07,
		idemtest.FaultTruncatedResponse: 0.07,
	}}
	e := newEnv(t)
	store, err := idem.New(idemtest.Client(idemtest.Endpoint(t), faults.Option), e.processed, func(o *idem.Options) {})
	if err != nil {
		t.Fatal(err)
	}
	var queue []spec
	want := map[string]int{}
	for i := range messages {
		sp := spec{id: fmt.Sprint("evt_", i), account: fmt.Sprint("acc-", i%7), cents: i + 1}
		want[sp.account] += sp.cents
		for range 1 + i%3 {
			queue = append(queue, sp)
		}
	}
	rand.Shuffle(len(queue), func(i, j int) { queue[i], queue[j] = queue[j], queue[i] })
	outcomes := map[string]int{}
	for sent := 0; len(queue) > 0; sent++ {
		if sent > 10*messages {
			t.Fatalf("%d messages still failing after %d batches", len(queue), sent)
		}
		batch := queue[:min(10, len(queue))]
		out := store.ProcessBatch(context.Background(), msgs(batch), e.batchHandler(batch))
		var failed []spec
		for i, r := range out {
			outcomes[kind(r)]++
			if r.Err != nil {
				failed = append(failed, batch[i])
			}
		}
		queue = append(queue[len(batch):], failed...)
	}
	for account, cents := range want {
		if got := e.balance(t, account); got != cents {
			t.Errorf("balance of %s: want %d, got %d (double or lost effect)", account, cents, got)
		}
	}
	t.Logf("requests %d, faults %v, outcomes %v", faults.Requests(), faults.Counts(), outcomes)
}

// answerFunc answers TransactWriteItems from the input alone: a scripted
// server for the retry tests, as a real one cannot be made to conflict.
type answerFunc func(claims []string, actions int) error

func (f answerFunc) TransactWriteItems(_ context.Context, in *dynamodb.TransactWriteItemsInput, _ ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error) {
	var claims []string
	for _, it := range in.TransactItems {
		if it.Put != nil && aws.ToString(it.Put.TableName) == "processed" {
			claims = append(claims, it.Put.Item["pk"].(*types.AttributeValueMemberS).Value)
		}
	}
	if err := f(claims, len(in.TransactItems)); err != nil {
		return nil, err
	}
	return &dynamodb.TransactWriteItemsOutput{}, nil
}

// blame cancels a transaction holding claim b (two actions per message)
// with code on b's claim and None elsewhere.
func blame(claims []string, b, code string) error {
	codes := make([]string, 0, 2*len(claims))
	for _, c := range claims {
		if c == b {
			codes = append(codes, code, "None")
		} else {
			codes = append(codes, "None", "None")
		}
	}
	return cancelled(codes...)
}

// TestProcessBatchRetries: how a batch reads cancellations it cannot
// settle by itself, with a scripted server.
func TestProcessBatchRetries(t *testing.T) {
	const b = "s#b" // the second message's claim
	for _, tc := range []struct {
		name      string
		answer    func(call int, claims []string, actions int) error
		deadline  bool
		wantCalls int
		want      []string
	}{
		// The innocent message of a conflicted transaction is sent again at
		// once, the blamed one after its backoff: three calls.
		{"conflict, then commit", func(call int, claims []string, _ int) error {
			if call == 1 {
				return blame(claims, b, "TransactionConflict")
			}
			return nil
		}, false, 3, []string{"Processed", "Processed"}},
		{"conflict outlives MaxAttempts, the other commits", func(_ int, claims []string, _ int) error {
			if slices.Contains(claims, b) {
				return blame(claims, b, "ThrottlingError")
			}
			return nil
		}, false, 4, []string{"Processed", "Retryable"}},
		// Only the blamed message fails at the deadline: its innocent
		// bystander is sent again at once, without waiting, and commits.
		{"deadline too near to wait", func(_ int, claims []string, _ int) error {
			if slices.Contains(claims, b) {
				return blame(claims, b, "TransactionConflict")
			}
			return nil
		}, true, 2, []string{"Processed", "Retryable"}},
		{"shared transaction refused: each alone", func(_ int, claims []string, _ int) error {
			if len(claims) > 1 {
				return &smithy.GenericAPIError{Code: "ValidationException", Message: "Transaction request cannot include multiple operations on one item"}
			}
			return nil
		}, false, 3, []string{"Processed", "Processed"}},
		{"reasons that do not match the actions: each alone", func(_ int, claims []string, _ int) error {
			if len(claims) > 1 {
				return cancelled("TransactionConflict")
			}
			return nil
		}, false, 3, []string{"Processed", "Processed"}},
		{"a cancellation that blames nobody", func(_ int, _ []string, actions int) error {
			return cancelled(repeat("None", actions)...)
		}, false, 1, []string{"store", "store"}},
		{"missing table: each message alone, to tell whose", func(int, []string, int) error {
			return &types.ResourceNotFoundException{Message: aws.String("no table")}
		}, false, 3, []string{"TableNotFound", "TableNotFound"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			calls := 0
			fake := answerFunc(func(claims []string, actions int) error {
				calls++
				return tc.answer(calls, claims, actions)
			})
			store, err := idem.New(fake, "processed", func(o *idem.Options) {
				o.MaxAttempts, o.BackoffBase, o.BackoffMax = 3, time.Microsecond, time.Microsecond
				if tc.deadline {
					o.BackoffBase, o.BackoffMax = 24*time.Hour, 24*time.Hour
				}
			})
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			if tc.deadline {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, time.Microsecond)
				defer cancel()
			}
			batch := []idem.Message{{ID: "a", Source: "s"}, {ID: "b", Source: "s"}}
			out := store.ProcessBatch(ctx, batch, func(_ context.Context, _ int, m idem.Message) (idem.Effect, error) {
				return idem.Effect{Writes: []types.TransactWriteItem{{ConditionCheck: &types.ConditionCheck{
					TableName: aws.String("t"), Key: map[string]types.AttributeValue{"k": &types.AttributeValueMemberS{Value: m.ID}},
					ConditionExpression: aws.String("attribute_exists(k)"),
				}}}}, nil
			})
			if calls != tc.wantCalls {
				t.Errorf("calls: want %d, got %d", tc.wantCalls, calls)
			}
			for i, r := range out {
				var se *idem.StoreError
				got := kind(r)
				if errors.As(r.Err, &se) {
					got = "store"
				}
				if got != tc.want[i] {
					t.Errorf("message %d: want %s, got %s", i, tc.want[i], got)
				}
			}
		})
	}
}

// A batch holding a redelivery of one of its own messages costs one
// transaction: the copy is the first's Duplicate without a call.
func ExampleStore_ProcessBatch() {
	ctx := context.Background()
	env, err := idemtest.Start(ctx) // a local DynamoDB, as in tests
	if err != nil {
		fmt.Println(err)
		return
	}
	client, processed, accounts := env.Client, env.Processed, env.Accounts
	store, err := idem.New(client, processed, func(o *idem.Options) {})
	if err != nil {
		panic(err)
	}
	batch := []idem.Message{
		{ID: "evt_1", Source: "credits", Payload: []byte(`{"account":"acc-1","cents":500}`)},
		{ID: "evt_2", Source: "credits", Payload: []byte(`{"account":"acc-2","cents":250}`)},
		{ID: "evt_1", Source: "credits", Payload: []byte(`{"account":"acc-1","cents":500}`)},
	}
	credit := func(ctx context.Context, i int, m idem.Message) (idem.Effect, error) {
		var c struct {
			Account string `json:"account"`
			Cents   int    `json:"cents"`
		}
		if err := json.Unmarshal(m.Payload, &c); err != nil {
			return idem.Effect{}, err
		}
		w, err := idem.Update(accounts, map[string]string{"account": c.Account}, expression.Add(expression.Name("balance"), expression.Value(c.Cents)))
		return idem.Effect{Writes: []types.TransactWriteItem{w}, Response: []byte("credited " + c.Account)}, err
	}
	for i, r := range store.ProcessBatch(ctx, batch, credit) {
		fmt.Println(batch[i].ID, r.Result.Outcome, string(r.Result.Record.Response), r.Err)
	}
	// Output:
	// evt_1 Processed credited acc-1 <nil>
	// evt_2 Processed credited acc-2 <nil>
	// evt_1 Duplicate credited acc-1 <nil>
}
