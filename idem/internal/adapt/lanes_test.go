package adapt_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/idemkit/kit/idem"
	"github.com/idemkit/kit/idem/internal/adapt"
)

// TestConcurrency: lanes run at once up to Concurrency, a lane's records
// never at once, and in order.
func TestConcurrency(t *testing.T) {
	for _, tc := range []struct {
		name        string
		concurrency int
		lane        func(i int) int
		want        int // the bound: this many handlers at once, never more
	}{
		{"one at a time", 1, func(i int) int { return i }, 1},
		{"three", 3, func(i int) int { return i }, 3},
		{"default", 0, func(i int) int { return i }, adapt.DefaultConcurrency},
		{"two lanes", 10, func(i int) int { return i % 2 }, 2},
		{"one lane", 10, func(int) int { return 0 }, 1},
	} {
		for _, w := range ways {
			t.Run(tc.name+"/"+w.name, func(t *testing.T) {
				e := newEnv(t)
				// The first handlers wait until the bound is reached, so the
				// test sees it reached whatever the scheduling; the timer only
				// keeps a broken bound from hanging the test.
				var (
					mu             sync.Mutex
					inFlight, most int
					reached        = make(chan struct{})
					once           sync.Once
				)
				d := e.build(t, w, laneOptions{Concurrency: tc.concurrency}, func(ctx context.Context, id string) (idem.Effect, error) {
					mu.Lock()
					inFlight++
					most = max(most, inFlight)
					if inFlight >= tc.want {
						once.Do(func() { close(reached) })
					}
					mu.Unlock()
					defer func() {
						mu.Lock()
						inFlight--
						mu.Unlock()
					}()
					select {
					case <-reached:
					case <-time.After(30 * time.Second):
						once.Do(func() { close(reached) })
					}
					for range 10 {
						runtime.Gosched() // let a record over the bound, if any, start now
					}
					return e.credit(ctx, id)
				})
				recs := testBatch("r", 24, tc.lane)
				checkFailed(t, d(context.Background(), recs))
				if most != tc.want {
					t.Errorf("most handlers in flight: want %d, got %d", tc.want, most)
				}
				for l := range 24 {
					var want []string
					for _, r := range recs {
						if r.lane == l {
							want = append(want, r.id)
						}
					}
					if got := e.ran(want...); len(want) > 0 && !slices.Equal(got, want) {
						t.Errorf("lane %d ran %q, want %q", l, got, want)
					}
				}
			})
		}
	}
}

// TestLaneStopsAtItsFirstFailure: after a lane's first failure (an error,
// a panic) its later records are reported failed without running; the
// other lanes go on, and the failed records commit when delivered again.
func TestLaneStopsAtItsFirstFailure(t *testing.T) {
	recs := []testRecord{{"a1", 0}, {"b1", 1}, {"fail-a2", 0}, {"b2", 1}, {"a3", 0}, {"panic-c1", 2}, {"c2", 2}, {"b3", 1}}
	for _, w := range ways {
		for _, mode := range modes {
			t.Run(w.name+"/"+mode.name, func(t *testing.T) {
				e := newEnv(t)
				var o laneOptions
				mode.opt(&o)
				d := e.build(t, w, o, e.credit)
				checkFailed(t, d(context.Background(), recs), "fail-a2", "a3", "panic-c1", "c2")
				for _, lane := range [][]string{{"a1", "fail-a2"}, {"b1", "b2", "b3"}, {"panic-c1"}} {
					if got := e.ran("a1", "fail-a2", "a3", "b1", "b2", "b3", "panic-c1", "c2"); !slices.Equal(filter(got, lane), lane) {
						t.Errorf("ran %q, want %q of lane %q", got, lane, lane[0])
					}
				}
				if got := e.ran("a3", "c2"); len(got) > 0 {
					t.Errorf("%q ran after an earlier record of their lane failed", got)
				}
				e.checkOutcomes(t, map[idem.Outcome]int{idem.Processed: 4, idem.Failed: 4})
				e.checkCredited(t, "a1", "b1", "b2", "b3")
				// The records not started, delivered again, commit.
				again := []testRecord{{"a3", 0}, {"c2", 2}}
				checkFailed(t, d(context.Background(), again))
				e.checkCredited(t, "a1", "b1", "b2", "b3", "a3", "c2")
			})
		}
	}
}

// filter is the ids of got that are in keep, in got's order.
func filter(got, keep []string) []string {
	return slices.DeleteFunc(slices.Clone(got), func(id string) bool { return !slices.Contains(keep, id) })
}

// TestDeadlineMargin: no record starts once less than the margin remains
// before the deadline, or once the context is done; each is reported
// failed with idem.ErrDeadline's reason, and nothing is committed.
func TestDeadlineMargin(t *testing.T) {
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	for _, tc := range []struct {
		name   string
		ctx    func(t *testing.T) context.Context
		margin time.Duration
		skip   bool
	}{
		{"within the default margin", deadlineIn(time.Second), 0, true},
		{"within a set margin", deadlineIn(time.Minute), 2 * time.Minute, true},
		{"outside the margin", deadlineIn(time.Minute), 0, false},
		{"no margin", deadlineIn(1900 * time.Millisecond), -1, false},
		{"no deadline", func(*testing.T) context.Context { return context.Background() }, 0, false},
		{"context done", func(*testing.T) context.Context { return cancelled }, 0, true},
	} {
		for _, w := range ways {
			for _, mode := range modes {
				t.Run(tc.name+"/"+w.name+"/"+mode.name, func(t *testing.T) {
					e := newEnv(t)
					o := laneOptions{DeadlineMargin: tc.margin}
					mode.opt(&o)
					d := e.build(t, w, o, e.credit)
					recs := []testRecord{{"d1", 0}, {"d2", 1}, {"d3", 1}}
					got := d(tc.ctx(t), recs)
					if !tc.skip {
						checkFailed(t, got)
						e.checkCredited(t, "d1", "d2", "d3")
						return
					}
					checkFailed(t, got, "d1", "d2", "d3")
					if ran := e.ran("d1", "d2", "d3"); len(ran) > 0 {
						t.Errorf("%q ran within the deadline margin", ran)
					}
					e.checkCredited(t)
					e.checkOutcomes(t, map[idem.Outcome]int{idem.Failed: 3})
					if !strings.Contains(e.logs.String(), idem.ErrDeadline.Error()) {
						t.Errorf("skipped records are not logged with %q:\n%s", idem.ErrDeadline, e.logs.String())
					}
				})
			}
		}
	}
}

func deadlineIn(d time.Duration) func(t *testing.T) context.Context {
	return func(t *testing.T) context.Context {
		ctx, cancel := context.WithDeadline(context.Background(), time.Now().Add(d))
		t.Cleanup(cancel)
		return ctx
	}
}

// TestRunningRecordsStopAtHalfTheMargin: a running handler's context ends
// half the margin before the invoke's deadline, so the response is
// returned in time.
func TestRunningRecordsStopAtHalfTheMargin(t *testing.T) {
	for _, w := range ways {
		for _, mode := range modes {
			t.Run(w.name+"/"+mode.name, func(t *testing.T) {
				e := newEnv(t)
				deadline := time.Now().Add(time.Hour)
				ctx, cancel := context.WithDeadline(context.Background(), deadline)
				defer cancel()
				var got time.Time
				o := laneOptions{DeadlineMargin: 10 * time.Minute}
				mode.opt(&o)
				d := e.build(t, w, o, func(ctx context.Context, id string) (idem.Effect, error) {
					got, _ = ctx.Deadline()
					return e.credit(ctx, id)
				})
				checkFailed(t, d(ctx, []testRecord{{"m1", 0}}))
				if want := deadline.Add(-5 * time.Minute); !got.Equal(want) {
					t.Errorf("handler's deadline: want %v, got %v", want, got)
				}
			})
		}
	}
}

// TestStorePanicFailsRecordsNotTheProcess: a panic in what the Store
// calls without recovery, here its Logger, after "bad" committed, neither
// ends the process nor makes a function error. Per record, it fails "bad"
// and the rest of its lane; in batch mode, where it happens once the wave
// has committed, every record not failed yet. The redelivery finds the
// committed ones: each credit once.
func TestStorePanicFailsRecordsNotTheProcess(t *testing.T) {
	recs := []testRecord{{"one", 0}, {"bad", 1}, {"after", 1}, {"other", 2}}
	for _, w := range ways {
		for _, mode := range []struct {
			name   string
			opt    func(*laneOptions)
			failed []string
		}{
			{modes[0].name, modes[0].opt, []string{"bad", "after"}},
			{modes[1].name, modes[1].opt, []string{"one", "bad", "after", "other"}},
		} {
			t.Run(w.name+"/"+mode.name, func(t *testing.T) {
				e := newEnv(t, func(o *idem.Options) { o.Logger = slog.New(&panicOnce{id: "bad"}) })
				var o laneOptions
				mode.opt(&o)
				d := e.build(t, w, o, e.credit)
				checkFailed(t, d(context.Background(), recs), mode.failed...)
				checkFailed(t, d(context.Background(), recs))
				e.checkCredited(t, "one", "bad", "after", "other")
			})
		}
	}
}

// panicOnce is a slog handler that panics on the first record of the
// delivery whose id is id, and drops every record.
type panicOnce struct {
	id   string
	done atomic.Bool
}

func (p *panicOnce) Enabled(context.Context, slog.Level) bool { return true }
func (p *panicOnce) WithAttrs([]slog.Attr) slog.Handler       { return p }
func (p *panicOnce) WithGroup(string) slog.Handler            { return p }

func (p *panicOnce) Handle(_ context.Context, r slog.Record) error {
	r.Attrs(func(a slog.Attr) bool {
		if a.Key == "id" && a.Value.String() == p.id && p.done.CompareAndSwap(false, true) {
			panic("the log is full")
		}
		return true
	})
	return nil
}

// TestLeaseInFlightElsewhere: under a lease, a record whose lease another
// environment (another Store, another process) holds is reported failed
// without running its handler, with the rest of its lane; once the first
// delivery is done, the retry is a Duplicate and the lane goes on.
func TestLeaseInFlightElsewhere(t *testing.T) {
	for _, w := range ways {
		t.Run(w.name, func(t *testing.T) {
			e := newEnv(t)
			entered, release := make(chan string, 1), make(chan struct{})
			var held atomic.Bool
			h := func(ctx context.Context, id string) (idem.Effect, error) {
				if id == "first" {
					if !held.CompareAndSwap(false, true) {
						t.Error("first's handler ran while another delivery held its lease")
						return idem.Effect{}, errors.New("ran twice")
					}
					l, _ := idem.LeaseFromContext(ctx)
					entered <- l.Key
					<-release
				}
				return e.credit(ctx, id)
			}
			o := laneOptions{Lease: &idem.LeaseOptions{}}
			here := e.build(t, w, o, h)
			there, err := w.build(e.Store(t, func(o *idem.Options) { o.Logger = slog.New(slog.NewJSONHandler(&e.logs, nil)) }), o, h)
			if err != nil {
				t.Fatal(err)
			}
			recs := []testRecord{{"first", 0}, {"second", 0}}
			done := make(chan []string)
			go func() { done <- here(context.Background(), recs) }()
			if key := <-entered; !strings.HasSuffix(key, "#first") {
				t.Errorf("the lease's key: want the claim key of first, got %q", key)
			}
			checkFailed(t, there(context.Background(), recs), "first", "second")
			close(release)
			checkFailed(t, <-done)
			checkFailed(t, there(context.Background(), recs))
			e.checkCredited(t, "first", "second")
			e.checkOutcomes(t, map[idem.Outcome]int{idem.Processed: 2, idem.InFlight: 1, idem.Failed: 1, idem.Duplicate: 2})
		})
	}
}

// TestNewRefusesBadWiring: New says what is wrong with its options,
// naming the adapter, instead of panicking, before any record is lost to
// it.
func TestNewRefusesBadWiring(t *testing.T) {
	e := newEnv(t)
	scoped := e.Store(t, func(o *idem.Options) { o.Scope = "billing" })
	pkg := map[string]string{"LaneRunner": "adapt", "sqsconsumer": "sqsconsumer", "kafkaconsumer": "kafkaconsumer"}
	for _, tc := range []struct {
		name  string
		store *idem.Store
		h     recordHandler
		o     laneOptions
		error string // after "<package>: New: "; "" when New accepts
	}{
		{"nil store", nil, e.credit, laneOptions{}, "nil Store"},
		{"nil handler (JSONHandler(nil))", e.store, nil, laneOptions{}, "nil Handler"},
		{"Source over 1,024 bytes", e.store, e.credit, laneOptions{Source: strings.Repeat("s", 1025)}, "Options.Source: Source is 1025 bytes"},
		{"Source all spaces", e.store, e.credit, laneOptions{Source: "   "}, "Options.Source: Source is all spaces"},
		{"Source with a control character", e.store, e.credit, laneOptions{Source: "credits\n"}, "Options.Source"},
		{"Source with # as the scope", e.store, e.credit, laneOptions{Source: "billing#eu"}, `Options.Source: source "billing#eu" holds a "#"`},
		{"Source with # beside a Scope", scoped, e.credit, laneOptions{Source: "billing#eu"}, ""},
		{"Lease with BatchTransactions", e.store, e.credit, laneOptions{Lease: &idem.LeaseOptions{}, BatchTransactions: true},
			"Options.Lease and BatchTransactions exclude each other"},
		{"Lease", e.store, e.credit, laneOptions{Lease: &idem.LeaseOptions{}}, ""},
		{"Source", e.store, e.credit, laneOptions{Source: "credits"}, ""},
		{"no Source: each record names its own", e.store, e.credit, laneOptions{}, ""},
	} {
		for _, w := range ways {
			if tc.h == nil && w.name == "LaneRunner" {
				continue // the adapters refuse a nil Handler of their own type
			}
			t.Run(tc.name+"/"+w.name, func(t *testing.T) {
				got, err := w.build(tc.store, tc.o, tc.h)
				if tc.error == "" {
					if err != nil || got == nil {
						t.Fatalf("want a handler, got %v", err)
					}
					return
				}
				want := pkg[w.name] + ": New: " + tc.error
				if err == nil || !strings.HasPrefix(err.Error(), want) || got != nil {
					t.Fatalf("want an error saying %q and no handler, got %v", want, err)
				}
			})
		}
	}
}

// TestFailed: the response lists the failed records in batch order, and
// an empty list, never null, when none failed.
func TestFailed(t *testing.T) {
	failed := errors.New("failed")
	for _, tc := range []struct {
		name string
		errs []error
		want string
	}{
		{"none", []error{nil, nil}, "[]"},
		{"no records", nil, "[]"},
		{"some", []error{nil, failed, nil, failed}, `["r1","r3"]`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, _ := json.Marshal(adapt.Failed(tc.errs, func(i int) string { return fmt.Sprint("r", i) }))
			if string(got) != tc.want {
				t.Errorf("want %s, got %s", tc.want, got)
			}
		})
	}
}
