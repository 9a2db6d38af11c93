package sqsconsumer_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemkit/kit/idem"
	"github.com/idemkit/kit/idem/idemtest"
	"github.com/idemkit/kit/idem/sqsconsumer"
)

func TestMain(m *testing.M) { idemtest.Main(m) }

const (
	queueARN = "arn:aws:sqs:us-east-1:123456789012:credits"
	fifoARN  = "arn:aws:sqs:us-east-1:123456789012:credits.fifo"
)

// env is one test's tables and counted client (idemtest.Env), a Store over
// them, and what the Store logged and counted.
type env struct {
	*idemtest.Env
	store   *idem.Store
	metrics bytes.Buffer // written under the Store's lock
	logs    bytes.Buffer // written under slog's lock
	runs    runLog
}

// newEnv is a test's env; optFns apply after its own Observers and Logger.
func newEnv(t *testing.T, optFns ...func(*idem.Options)) *env {
	t.Helper()
	e := &env{Env: idemtest.NewEnv(t)}
	store, err := idem.New(e.Client, e.Processed, append([]func(*idem.Options){func(o *idem.Options) {
		o.Observers = []idem.Observer{idemtest.EMF(t, &e.metrics)}
		o.Logger = slog.New(slog.NewJSONHandler(&e.logs, nil))
	}}, optFns...)...)
	if err != nil {
		t.Fatal(err)
	}
	e.store = store
	return e
}

// runLog records which records reached the handler, in order.
type runLog struct {
	mu  sync.Mutex
	ids []string
}

func (r *runLog) add(id string) {
	r.mu.Lock()
	r.ids = append(r.ids, id)
	r.mu.Unlock()
}

func (r *runLog) ran(id string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Contains(r.ids, id)
}

// order is the handler's order of the given records.
func (r *runLog) order(ids ...string) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var got []string
	for _, id := range r.ids {
		if slices.Contains(ids, id) {
			got = append(got, id)
		}
	}
	return got
}

// handler credits {"account": …, "cents": …}; the body "fail" is refused
// and "panic" panics.
func (e *env) handler(rec events.SQSMessage) (idem.Effect, error) {
	e.runs.add(rec.MessageId)
	switch rec.Body {
	case "panic":
		panic("kaboom")
	case "fail":
		return idem.Effect{}, errors.New("refused")
	}
	var b struct {
		Account string `json:"account"`
		Cents   int    `json:"cents"`
	}
	if err := json.Unmarshal([]byte(rec.Body), &b); err != nil || b.Account == "" || b.Cents <= 0 {
		return idem.Effect{}, fmt.Errorf("malformed body %q", rec.Body)
	}
	return idem.Effect{Writes: []types.TransactWriteItem{e.credit(b.Account, b.Cents)}}, nil
}

func (e *env) credit(account string, cents int) types.TransactWriteItem {
	return credit(e.Accounts, account, cents)
}

// credit adds cents to the balance of account in table.
func credit(table, account string, cents int) types.TransactWriteItem {
	w, err := idem.Update(table, map[string]string{"account": account}, expression.Add(expression.Name("balance"), expression.Value(cents)))
	if err != nil {
		panic(err) // a constant expression: cannot fail
	}
	return w
}

// debit takes cents from the balance of account in table if it holds that
// much: the condition fails on an empty account.
func debit(table, account string, cents int) types.TransactWriteItem {
	w, err := idem.Update(table, map[string]string{"account": account}, expression.Add(expression.Name("balance"), expression.Value(-cents)),
		expression.Name("balance").GreaterThanEqual(expression.Value(cents)))
	if err != nil {
		panic(err) // a constant expression: cannot fail
	}
	return w
}

// newHandler is sqsconsumer.New for a test's wiring, which New must accept.
func newHandler(tb testing.TB, store *idem.Store, h sqsconsumer.Handler, optFns ...func(*sqsconsumer.Options)) func(context.Context, events.SQSEvent) (events.SQSEventResponse, error) {
	tb.Helper()
	fn, err := sqsconsumer.New(store, h, optFns...)
	if err != nil {
		tb.Fatal(err)
	}
	return fn
}

// run delivers a batch and returns the failed messageIds, in batch order.
func (e *env) run(t *testing.T, ctx context.Context, recs []events.SQSMessage, optFns ...func(*sqsconsumer.Options)) []string {
	t.Helper()
	h := newHandler(t, e.store, func(_ context.Context, rec events.SQSMessage) (idem.Effect, error) { return e.handler(rec) }, optFns...)
	resp, err := h(ctx, events.SQSEvent{Records: recs})
	if err != nil {
		t.Fatalf("want no function error, got %v", err)
	}
	if resp.BatchItemFailures == nil {
		t.Fatal("want an empty batchItemFailures list, got null")
	}
	failed := []string{}
	for _, f := range resp.BatchItemFailures {
		failed = append(failed, f.ItemIdentifier)
	}
	return failed
}

func (e *env) checkBalances(t *testing.T, want map[string]int) {
	t.Helper()
	for account, cents := range want {
		if got := e.Balance(t, account); got != int64(cents) {
			t.Errorf("balance of %s: want %d, got %d", account, cents, got)
		}
	}
}

// outcomes counts the EMF lines written since the last call, by outcome.
func (e *env) outcomes(t *testing.T) map[idem.Outcome]int {
	t.Helper()
	got := map[idem.Outcome]int{}
	for line := range strings.Lines(e.metrics.String()) {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("metric line %q: %v", line, err)
		}
		for _, o := range []idem.Outcome{idem.Processed, idem.Duplicate, idem.Rejected, idem.KeyReuse, idem.Failed} {
			if _, ok := m[string(o)]; ok {
				got[o]++
			}
		}
	}
	e.metrics.Reset()
	return got
}

func checkOutcomes(t *testing.T, got, want map[idem.Outcome]int) {
	t.Helper()
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("metrics: want %v, got %v", want, got)
	}
}

func checkFailed(t *testing.T, got []string, want ...string) {
	t.Helper()
	if want == nil {
		want = []string{}
	}
	if !slices.Equal(got, want) {
		t.Errorf("batchItemFailures: want %q, got %q", want, got)
	}
}

// record is a standard-queue record; attrs are message attributes.
func record(id, body string, attrs ...string) events.SQSMessage {
	r := events.SQSMessage{MessageId: id, Body: body, EventSourceARN: queueARN, EventSource: "aws:sqs"}
	for i := 0; i+1 < len(attrs); i += 2 {
		if r.MessageAttributes == nil {
			r.MessageAttributes = map[string]events.SQSMessageAttribute{}
		}
		r.MessageAttributes[attrs[i]] = events.SQSMessageAttribute{DataType: "String", StringValue: aws.String(attrs[i+1])}
	}
	return r
}

// fifo is a FIFO-queue record of a message group, deduplicated by its id.
func fifo(id, group, body string) events.SQSMessage {
	return events.SQSMessage{MessageId: id, Body: body, EventSourceARN: fifoARN, EventSource: "aws:sqs",
		Attributes: map[string]string{"MessageGroupId": group, "MessageDeduplicationId": "dedup-" + id}}
}

func TestBatchAppliesEachRecordOnce(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	batch := []events.SQSMessage{
		record("m1", `{"account":"acc-9","cents":500}`, sqsconsumer.KeyAttribute, "evt_001"),
		record("m2", `{"account":"acc-7","cents":250}`),
		record("m3", `{"account":"acc-9","cents":500}`, sqsconsumer.KeyAttribute, "evt_001"), // re-sent by the producer
		record("m4", `{"account":"acc-9","cents":`),
	}
	checkFailed(t, e.run(t, ctx, batch), "m4")
	e.checkBalances(t, map[string]int{"acc-9": 500, "acc-7": 250})
	checkOutcomes(t, e.outcomes(t), map[idem.Outcome]int{idem.Processed: 2, idem.Duplicate: 1, idem.Failed: 1})
	if !strings.Contains(e.logs.String(), `malformed body`) {
		t.Errorf("the malformed record's reason is not logged:\n%s", e.logs.String())
	}

	// SQS delivers the whole batch again, as after a function timeout.
	checkFailed(t, e.run(t, ctx, batch), "m4")
	e.checkBalances(t, map[string]int{"acc-9": 500, "acc-7": 250})
	checkOutcomes(t, e.outcomes(t), map[idem.Outcome]int{idem.Duplicate: 3, idem.Failed: 1})
	if n := e.Claims(t); n != 2 {
		t.Errorf("claims: want 2, got %d", n)
	}
}

func TestFIFOFailureStopsItsGroupOnly(t *testing.T) {
	e := newEnv(t)
	batch := []events.SQSMessage{
		fifo("a1", "A", `{"account":"acc-a","cents":1}`),
		fifo("b1", "B", `{"account":"acc-b","cents":10}`),
		fifo("a2", "A", "fail"),
		fifo("b2", "B", `{"account":"acc-b","cents":20}`),
		fifo("a3", "A", `{"account":"acc-a","cents":100}`),
		fifo("c1", "C", "panic"),
		fifo("c2", "C", `{"account":"acc-c","cents":1000}`),
		fifo("b3", "B", `{"account":"acc-b","cents":30}`),
	}
	checkFailed(t, e.run(t, context.Background(), batch), "a2", "a3", "c1", "c2")
	for _, id := range []string{"a3", "c2"} {
		if e.runs.ran(id) {
			t.Errorf("%s ran after an earlier record of its group failed", id)
		}
	}
	for group, want := range map[string][]string{"A": {"a1", "a2"}, "B": {"b1", "b2", "b3"}, "C": {"c1"}} {
		if got := e.runs.order("a1", "a2", "a3", "b1", "b2", "b3", "c1", "c2"); !slices.Equal(filter(got, group), want) {
			t.Errorf("group %s ran %q, want %q", group, filter(got, group), want)
		}
	}
	e.checkBalances(t, map[string]int{"acc-a": 1, "acc-b": 60, "acc-c": 0})
	checkOutcomes(t, e.outcomes(t), map[idem.Outcome]int{idem.Processed: 4, idem.Failed: 4})
	if !strings.Contains(e.logs.String(), "an earlier record of its message group failed") {
		t.Errorf("skipped records are not logged:\n%s", e.logs.String())
	}
}

// filter keeps the ids of a group, whose ids start with its lower-case name.
func filter(ids []string, group string) []string {
	var out []string
	for _, id := range ids {
		if strings.HasPrefix(id, strings.ToLower(group)) {
			out = append(out, id)
		}
	}
	return out
}

func TestHandlerPanicFailsItsRecordOnly(t *testing.T) {
	e := newEnv(t)
	batch := []events.SQSMessage{
		record("m1", `{"account":"acc-9","cents":5}`),
		record("m2", "panic"),
		record("m3", `{"account":"acc-9","cents":7}`),
	}
	checkFailed(t, e.run(t, context.Background(), batch), "m2")
	e.checkBalances(t, map[string]int{"acc-9": 12})
	checkOutcomes(t, e.outcomes(t), map[idem.Outcome]int{idem.Processed: 2, idem.Failed: 1})
	if !strings.Contains(e.logs.String(), "kaboom") {
		t.Errorf("the panic is not logged:\n%s", e.logs.String())
	}
}

// TestAttemptIsTheReceiveCount: the Message a handler gets counts its
// delivery as SQS does (ApproximateReceiveCount), 0 when the record has no
// readable count, so that a Store tells redeliveries from first
// deliveries (idem.Options.ReadFirstAbove).
func TestAttemptIsTheReceiveCount(t *testing.T) {
	for _, tc := range []struct {
		count string // "" leaves the attribute out
		want  int
	}{{"1", 1}, {"3", 3}, {"", 0}, {"three", 0}} {
		t.Run(fmt.Sprintf("%q", tc.count), func(t *testing.T) {
			e := newEnv(t)
			got := -1
			h, err := sqsconsumer.New(e.store, func(ctx context.Context, _ events.SQSMessage) (idem.Effect, error) {
				msg, _ := idem.FromContext(ctx)
				got = msg.Attempt
				return idem.Effect{}, nil
			})
			if err != nil {
				t.Fatal(err)
			}
			rec := idemtest.SQSMessage("credits", `{"n":1}`, nil)
			delete(rec.Attributes, "ApproximateReceiveCount")
			if tc.count != "" {
				rec.Attributes["ApproximateReceiveCount"] = tc.count
			}
			if resp, _ := h(context.Background(), idemtest.SQSEvent(rec)); len(resp.BatchItemFailures) > 0 || got != tc.want {
				t.Errorf("want Attempt %d, got %d (failures %v)", tc.want, got, resp.BatchItemFailures)
			}
		})
	}
}

// TestReplayCountsReceives: idemtest.Replay redelivers an SQS batch as SQS
// does, each record's receive count one more each time, and leaves the
// event it was given as it was.
func TestReplayCountsReceives(t *testing.T) {
	e := newEnv(t)
	var mu sync.Mutex
	var attempts []int
	h, err := sqsconsumer.New(e.store, func(ctx context.Context, _ events.SQSMessage) (idem.Effect, error) {
		msg, _ := idem.FromContext(ctx)
		mu.Lock()
		attempts = append(attempts, msg.Attempt)
		mu.Unlock()
		return idem.Effect{}, fmt.Errorf("fail, so that the next delivery runs the handler too")
	})
	if err != nil {
		t.Fatal(err)
	}
	ev := idemtest.SQSEvent(idemtest.SQSMessage("credits", `{"n":1}`, nil))
	idemtest.Replay(context.Background(), 3, h, ev)
	if !slices.Equal(attempts, []int{1, 2, 3}) || ev.Records[0].Attributes["ApproximateReceiveCount"] != "1" {
		t.Errorf("want attempts [1 2 3] and the event unchanged, got %v and %q", attempts, ev.Records[0].Attributes["ApproximateReceiveCount"])
	}
}
