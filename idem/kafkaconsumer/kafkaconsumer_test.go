package kafkaconsumer_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemkit/kit/idem"
	"github.com/idemkit/kit/idem/idemtest"
	"github.com/idemkit/kit/idem/kafkaconsumer"
)

func TestMain(m *testing.M) { idemtest.Main(m) }

// env is one test's tables and counted client (idemtest.Env), a Store over
// them, what the Store logged and observed, and which records reached the
// handler.
type env struct {
	*idemtest.Env
	store *idem.Store
	logs  bytes.Buffer // written under slog's lock
	seen  seen
	runs  runLog
	once  sync.Map // records whose "-once" failure has happened
}

// newEnv is a test's env; optFns apply after its own Observers and Logger.
func newEnv(t *testing.T, optFns ...func(*idem.Options)) *env {
	t.Helper()
	e := &env{Env: idemtest.NewEnv(t)}
	store, err := idem.New(e.Client, e.Processed, append([]func(*idem.Options){func(o *idem.Options) {
		o.Observers = []idem.Observer{&e.seen}
		o.Logger = slog.New(slog.NewJSONHandler(&e.logs, nil))
	}}, optFns...)...)
	if err != nil {
		t.Fatal(err)
	}
	e.store = store
	return e
}

// seen keeps what the Store observed since the last take.
type seen struct {
	mu  sync.Mutex
	obs []idem.Observation
}

func (s *seen) Observe(_ context.Context, o idem.Observation) {
	s.mu.Lock()
	s.obs = append(s.obs, o)
	s.mu.Unlock()
}

// take returns the outcomes observed since the last take, by outcome.
func (s *seen) take() map[idem.Outcome]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	got := map[idem.Outcome]int{}
	for _, o := range s.obs {
		got[o.Outcome]++
	}
	s.obs = nil
	return got
}

// keys returns the claim keys observed since the last take, sorted.
func (s *seen) keys() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var ks []string
	for _, o := range s.obs {
		ks = append(ks, o.Key)
	}
	slices.Sort(ks)
	return ks
}

func checkOutcomes(t *testing.T, got, want map[idem.Outcome]int) {
	t.Helper()
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("outcomes: want %v, got %v", want, got)
	}
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

// partition is the order in which the records of partition tp
// ("credits-0") reached the handler.
func (r *runLog) partition(tp string) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var got []string
	for _, id := range r.ids {
		if strings.HasPrefix(id, tp+"@") {
			got = append(got, id)
		}
	}
	return got
}

// id names a record as the test's failures do: "credits-0@15".
func id(rec events.KafkaRecord) string {
	return fmt.Sprintf("%s-%d@%d", rec.Topic, rec.Partition, rec.Offset)
}

// handler credits the value {"account": …, "cents": …}; the value "fail"
// is refused and "panic" panics; "fail-once " or "panic-once " before a
// credit does so on the record's first run only, as a flaky dependency
// would.
func (e *env) handler(rec events.KafkaRecord) (idem.Effect, error) {
	e.runs.add(id(rec))
	raw, err := base64.StdEncoding.DecodeString(rec.Value)
	if err != nil {
		return idem.Effect{}, err
	}
	v := string(raw)
	for _, p := range []string{"fail-once ", "panic-once "} {
		if rest, ok := strings.CutPrefix(v, p); ok {
			v = rest
			if _, again := e.once.LoadOrStore(id(rec), true); !again {
				v = strings.TrimSuffix(strings.TrimSpace(p), "-once")
			}
		}
	}
	switch v {
	case "panic":
		panic("kaboom")
	case "fail":
		return idem.Effect{}, errors.New("refused")
	}
	var b struct {
		Account string `json:"account"`
		Cents   int    `json:"cents"`
	}
	if err := json.Unmarshal([]byte(v), &b); err != nil || b.Account == "" || b.Cents <= 0 {
		return idem.Effect{}, fmt.Errorf("malformed value %q", v)
	}
	return idem.Effect{Writes: []types.TransactWriteItem{credit(e.Accounts, b.Account, b.Cents)}}, nil
}

// credit adds cents to the balance of account in table.
func credit(table, account string, cents int) types.TransactWriteItem {
	w, err := idem.Update(table, map[string]string{"account": account}, expression.Add(expression.Name("balance"), expression.Value(cents)))
	if err != nil {
		panic(err) // a constant expression: cannot fail
	}
	return w
}

// newHandler is kafkaconsumer.New for a test's wiring, which New must
// accept.
func newHandler(tb testing.TB, store *idem.Store, h kafkaconsumer.Handler, optFns ...func(*kafkaconsumer.Options)) func(context.Context, events.KafkaEvent) (kafkaconsumer.Response, error) {
	tb.Helper()
	fn, err := kafkaconsumer.New(store, h, optFns...)
	if err != nil {
		tb.Fatal(err)
	}
	return fn
}

// run delivers a batch through the env's handler and returns the failed
// records, as "<partition>@<offset>", in the response's order.
func (e *env) run(t *testing.T, ctx context.Context, ev events.KafkaEvent, optFns ...func(*kafkaconsumer.Options)) []string {
	t.Helper()
	h := newHandler(t, e.store, func(_ context.Context, rec events.KafkaRecord) (idem.Effect, error) { return e.handler(rec) }, optFns...)
	resp, err := h(ctx, ev)
	if err != nil {
		t.Fatalf("want no function error, got %v", err)
	}
	return failed(t, resp)
}

// failed is resp's records, as "<partition>@<offset>".
func failed(t *testing.T, resp kafkaconsumer.Response) []string {
	t.Helper()
	if resp.BatchItemFailures == nil {
		t.Fatal("want an empty batchItemFailures list, got null")
	}
	out := []string{}
	for _, f := range resp.BatchItemFailures {
		out = append(out, fmt.Sprintf("%s@%d", f.ItemIdentifier.Partition, f.ItemIdentifier.Offset))
	}
	return out
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

func (e *env) checkBalances(t *testing.T, want map[string]int) {
	t.Helper()
	for account, cents := range want {
		if got := e.Balance(t, account); got != int64(cents) {
			t.Errorf("balance of %s: want %d, got %d", account, cents, got)
		}
	}
}

// rec is a record of the credits topic; key, when not empty, is its
// idempotency-key header.
func rec(partition, offset int64, value, key string) events.KafkaRecord {
	var h map[string]string
	if key != "" {
		h = map[string]string{kafkaconsumer.KeyHeader: key}
	}
	return idemtest.KafkaRecord("credits", partition, offset, value, h)
}

var modes = []struct {
	name string
	opt  func(*kafkaconsumer.Options)
}{
	{"one transaction per record", func(*kafkaconsumer.Options) {}},
	{"BatchTransactions", batchMode},
}

func batchMode(o *kafkaconsumer.Options) { o.BatchTransactions = true }
