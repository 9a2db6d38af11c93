package seams_test

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemkit/kit/idem"
	"github.com/idemkit/kit/idem/idemtest"
)

func TestMain(m *testing.M) { idemtest.Main(m) }

// world is one test's tables on the local endpoint, a clock it moves, and
// every outcome its Stores observed.
type world struct {
	*idemtest.Env
	now atomic.Int64 // the Stores' clock, Unix nanoseconds
	rec recorder
}

func newWorld(t *testing.T) *world {
	t.Helper()
	w := &world{Env: idemtest.NewEnv(t)}
	w.now.Store(time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC).UnixNano())
	return w
}

func (w *world) clock() time.Time { return time.Unix(0, w.now.Load()) }

// advance moves the Stores' clock on by d.
func (w *world) advance(d time.Duration) { w.now.Add(int64(d)) }

// store is a Store on the world's processed-ids table, with its clock
// and recorder, and a retention of 2 days, the least a lease allows.
func (w *world) store(t *testing.T, optFns ...func(*idem.Options)) *idem.Store {
	t.Helper()
	return w.storeOn(t, w.Processed, optFns...)
}

// storeOn is store on another processed-ids table.
func (w *world) storeOn(t *testing.T, table string, optFns ...func(*idem.Options)) *idem.Store {
	t.Helper()
	opts := []func(*idem.Options){func(o *idem.Options) {
		o.Now, o.RetentionDays = w.clock, 2
		o.Logger = slog.New(slog.DiscardHandler)
		o.Observers = []idem.Observer{&w.rec}
		o.BackoffBase, o.BackoffMax = time.Millisecond, time.Millisecond
	}}
	s, err := idem.New(w.Client, table, append(opts, optFns...)...)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// credit is the effect's write: cents more on account.
func (w *world) credit(account string, cents int) types.TransactWriteItem {
	wr, err := idem.Update(w.Accounts, map[string]string{"account": account}, expression.Add(expression.Name("balance"), expression.Value(cents)))
	if err != nil {
		panic(err) // a constant expression: the test's mistake
	}
	return wr
}

// refused is a write whose condition never holds: the effect is rejected.
func (w *world) refused(account string) types.TransactWriteItem {
	wr, err := idem.Update(w.Accounts, map[string]string{"account": account}, expression.Add(expression.Name("balance"), expression.Value(1)),
		expression.Name("balance").GreaterThan(expression.Value(1<<50)))
	if err != nil {
		panic(err)
	}
	return wr
}

// recorder keeps every Observation, in order.
type recorder struct {
	mu  sync.Mutex
	obs []idem.Observation
}

func (r *recorder) Observe(_ context.Context, o idem.Observation) {
	r.mu.Lock()
	r.obs = append(r.obs, o)
	r.mu.Unlock()
}

// since returns the outcomes observed after the first n.
func (r *recorder) since(n int) []idem.Outcome {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []idem.Outcome
	for _, o := range r.obs[n:] {
		out = append(out, o.Outcome)
	}
	return out
}

func (r *recorder) len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.obs)
}
