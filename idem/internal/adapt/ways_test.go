package adapt_test

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemkit/kit/idem"
	"github.com/idemkit/kit/idem/batch"
	"github.com/idemkit/kit/idem/idemtest"
	"github.com/idemkit/kit/idem/internal/adapt"
	"github.com/idemkit/kit/idem/internal/seam"
	"github.com/idemkit/kit/idem/kafkaconsumer"
	"github.com/idemkit/kit/idem/sqsconsumer"
)

func TestMain(m *testing.M) { idemtest.Main(m) }

// testRecord is a record of these tests, whichever way it goes in: id is
// its idempotency key and names it in failures and logs; lane is its SQS
// FIFO message group or its Kafka partition.
type testRecord struct {
	id   string
	lane int
}

// testBatch is records whose lanes are lanes(i), ids prefix0, prefix1, ….
func testBatch(prefix string, n int, lane func(i int) int) []testRecord {
	recs := make([]testRecord, n)
	for i := range recs {
		recs[i] = testRecord{fmt.Sprint(prefix, i), lane(i)}
	}
	return recs
}

// recordHandler is a test's handler, reading a record by its id.
type recordHandler func(ctx context.Context, id string) (idem.Effect, error)

// deliver hands a batch over and returns the failed records' ids, sorted.
type deliver func(ctx context.Context, recs []testRecord) []string

// A way into the lane runner: the runner itself, on testRecords, or a
// batch adapter built on it, on its own events, so that each test of the
// runner checks too that each adapter hands it its Options. build returns
// what New returns; for a nil h the adapters get JSONHandler(nil), which
// must be a nil Handler, which New must refuse.
type way struct {
	name  string
	build func(store *idem.Store, o laneOptions, h recordHandler) (deliver, error)
}

// laneOptions are a test's options, which each way hands over as its own.
type laneOptions = batch.Options[testRecord]

// options is o for an adapter whose records are K, with its default Key.
func options[K any](o laneOptions) batch.Options[K] {
	return batch.Options[K]{Source: o.Source, Concurrency: o.Concurrency, BatchTransactions: o.BatchTransactions, DeadlineMargin: o.DeadlineMargin, Lease: o.Lease}
}

var errStopped = errors.New("an earlier record of its lane failed")

var ways = []way{
	{"LaneRunner", func(store *idem.Store, o laneOptions, h recordHandler) (deliver, error) {
		r, err := adapt.NewLaneRunner(store, "adapt", o, adapt.Records[testRecord, testRecord]{
			Record: func(rec testRecord) testRecord { return rec },
			NoKey:  errNoKey,
			Handle: func(ctx context.Context, rec testRecord) (idem.Effect, error) { return h(ctx, rec.id) },
			Message: func(rec testRecord) (idem.Message, error) {
				return idem.Message{Source: cmp.Or(o.Source, "lanes"), Payload: []byte(rec.id)}, nil
			},
			DefaultKey: func(rec testRecord) (string, error) { return rec.id, nil },
			NoSource:   errors.New("no source"),
			Name:       func(rec testRecord) string { return rec.id },
			Stopped:    func(_, after testRecord) error { return fmt.Errorf("%w (after %s)", errStopped, after.id) },
			Span:       func(rec testRecord) seam.Span { return seam.Span{Name: "process " + rec.id} },
		})
		if err != nil {
			return nil, err
		}
		return func(ctx context.Context, recs []testRecord) []string {
			var failed []string
			for i, err := range r.Run(ctx, recs, lanes(recs)) {
				if err != nil {
					failed = append(failed, recs[i].id)
				}
			}
			return sorted(failed)
		}, nil
	}},
	{"sqsconsumer", func(store *idem.Store, o laneOptions, h recordHandler) (deliver, error) {
		sh := sqsconsumer.JSONHandler[struct{}](nil) // nil
		if h != nil {
			sh = func(ctx context.Context, rec events.SQSMessage) (idem.Effect, error) { return h(ctx, rec.MessageId) }
		}
		fn, err := sqsconsumer.New(store, sh, func(so *sqsconsumer.Options) {
			*so = options[events.SQSMessage](o)
		})
		if err != nil {
			return nil, err
		}
		return func(ctx context.Context, recs []testRecord) []string {
			// A batch of lanes of one record comes from a standard queue,
			// whose records are a lane each; others from a FIFO queue.
			standard := len(lanes(recs)) == len(recs)
			var ev events.SQSEvent
			for _, r := range recs {
				rec := events.SQSMessage{MessageId: r.id, Body: r.id, EventSourceARN: "arn:aws:sqs:us-east-1:123456789012:lanes",
					MessageAttributes: map[string]events.SQSMessageAttribute{sqsconsumer.KeyAttribute: {DataType: "String", StringValue: &r.id}}}
				if !standard {
					rec.EventSourceARN += ".fifo"
					rec.Attributes = map[string]string{"MessageGroupId": strconv.Itoa(r.lane), "MessageDeduplicationId": r.id}
				}
				ev.Records = append(ev.Records, rec)
			}
			resp, _ := fn(ctx, ev)
			var failed []string
			for _, f := range resp.BatchItemFailures {
				failed = append(failed, f.ItemIdentifier)
			}
			return sorted(failed)
		}, nil
	}},
	{"kafkaconsumer", func(store *idem.Store, o laneOptions, h recordHandler) (deliver, error) {
		kh := kafkaconsumer.JSONHandler[struct{}](nil) // nil
		if h != nil {
			kh = func(ctx context.Context, rec events.KafkaRecord) (idem.Effect, error) {
				id, _ := kafkaconsumer.HeaderKey(rec)
				return h(ctx, id)
			}
		}
		fn, err := kafkaconsumer.New(store, kh, func(ko *kafkaconsumer.Options) {
			ko.Options = options[events.KafkaRecord](o)
		})
		if err != nil {
			return nil, err
		}
		return func(ctx context.Context, recs []testRecord) []string {
			var krecs []events.KafkaRecord
			for i, r := range recs { // the batch's order is each partition's offsets'
				krecs = append(krecs, idemtest.KafkaRecord("lanes", int64(r.lane), int64(i), r.id, map[string]string{kafkaconsumer.KeyHeader: r.id}))
			}
			resp, _ := fn(ctx, idemtest.KafkaEvent(krecs...))
			var failed []string
			for _, f := range resp.BatchItemFailures {
				failed = append(failed, recs[f.ItemIdentifier.Offset].id)
			}
			return sorted(failed)
		}, nil
	}},
}

// modes are the runner's two modes, as LaneOptions.
var modes = []struct {
	name string
	opt  func(*laneOptions)
}{
	{"one transaction per record", func(*laneOptions) {}},
	{"BatchTransactions", func(o *laneOptions) { o.BatchTransactions = true }},
}

// lanes is recs' lanes, as the runner takes them: each lane's indexes in
// batch order.
func lanes(recs []testRecord) [][]int {
	var out [][]int
	at := map[int]int{}
	for i, r := range recs {
		j, ok := at[r.lane]
		if !ok {
			j, at[r.lane] = len(out), len(out)
			out = append(out, nil)
		}
		out[j] = append(out[j], i)
	}
	return out
}

func sorted(ids []string) []string {
	slices.Sort(ids)
	if ids == nil {
		return []string{}
	}
	return ids
}

// env is one test's tables (idemtest.Env), a Store over them whose
// outcomes Env.Outcomes counts, what it logged, and what the handler ran.
type env struct {
	*idemtest.Env
	store *idem.Store
	logs  bytes.Buffer // written under slog's lock
	runs  sync.Map     // the records that reached the handler: id → its turn
	turns atomic.Int64
}

// newEnv is a test's env; optFns apply after its own Observers and Logger.
func newEnv(t *testing.T, optFns ...func(*idem.Options)) *env {
	t.Helper()
	e := &env{Env: idemtest.NewEnv(t)}
	e.store = e.Store(t, append([]func(*idem.Options){func(o *idem.Options) {
		o.Logger = slog.New(slog.NewJSONHandler(&e.logs, nil))
	}}, optFns...)...)
	return e
}

// build is w's handler over the env's Store, which must build.
func (e *env) build(t *testing.T, w way, o laneOptions, h recordHandler) deliver {
	t.Helper()
	d, err := w.build(e.store, o, h)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// credit is the usual handler: it adds 1 cent to "acc-<id>"; an id
// starting "fail" is refused and one starting "panic" panics.
func (e *env) credit(_ context.Context, id string) (idem.Effect, error) {
	e.runs.Store(id, e.turns.Add(1))
	switch {
	case strings.HasPrefix(id, "fail"):
		return idem.Effect{}, errors.New("refused")
	case strings.HasPrefix(id, "panic"):
		panic("kaboom")
	}
	w, err := idem.Update(e.Accounts, map[string]string{"account": "acc-" + id}, expression.Add(expression.Name("balance"), expression.Value(1)))
	return idem.Effect{Writes: []types.TransactWriteItem{w}}, err
}

// checkCredited: each of ids credited once, and nothing else claimed.
func (e *env) checkCredited(t *testing.T, ids ...string) {
	t.Helper()
	for _, id := range ids {
		if got := e.Balance(t, "acc-"+id); got != 1 {
			t.Errorf("balance of acc-%s: want 1, got %d", id, got)
		}
	}
	if n := e.Claims(t); n != len(ids) {
		t.Errorf("claims: want %d, got %d", len(ids), n)
	}
}

// checkOutcomes: the env's Store counted want, since it was built.
func (e *env) checkOutcomes(t *testing.T, want map[idem.Outcome]int) {
	t.Helper()
	if got := e.Outcomes.All(); !maps.Equal(got, want) {
		t.Errorf("outcomes: want %v, got %v", want, got)
	}
}

func checkFailed(t *testing.T, got []string, want ...string) {
	t.Helper()
	if want = sorted(want); !slices.Equal(got, want) {
		t.Errorf("failed: want %q, got %q", want, got)
	}
}

// ran is those of ids that reached the handler, in the order they did.
func (e *env) ran(ids ...string) []string {
	var got []string
	for _, id := range ids {
		if _, ok := e.runs.Load(id); ok {
			got = append(got, id)
		}
	}
	slices.SortFunc(got, func(a, b string) int {
		x, _ := e.runs.Load(a)
		y, _ := e.runs.Load(b)
		return cmp.Compare(x.(int64), y.(int64))
	})
	return got
}
