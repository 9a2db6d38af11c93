package kafkaconsumer_test

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/idemkit/kit/idem"
	"github.com/idemkit/kit/idem/idemtest"
	"github.com/idemkit/kit/idem/kafkaconsumer"
)

// TestConcurrency: partitions run at once up to Options.Concurrency, and
// a partition's records never at once, in order.
func TestConcurrency(t *testing.T) {
	e := newEnv(t)
	for _, tc := range []struct {
		name        string
		concurrency int
		partition   func(i int) int64
		want        int // the bound: this many handlers at once, never more
	}{
		{"one at a time", 1, func(i int) int64 { return int64(i) }, 1},
		{"three", 3, func(i int) int64 { return int64(i) }, 3},
		{"default", 0, func(i int) int64 { return int64(i) }, 10},
		{"two partitions", 10, func(i int) int64 { return int64(i % 2) }, 2},
		{"one partition", 10, func(int) int64 { return 0 }, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// The first handlers wait until the bound is reached, so the test
			// sees it reached whatever the scheduling; the timer only keeps a
			// broken bound from hanging the test.
			const records = 24
			var (
				mu             sync.Mutex
				inFlight, most int
				reached        = make(chan struct{})
				once           sync.Once
				order          = map[int64][]int64{}
			)
			h := newHandler(t, e.store, func(_ context.Context, rec events.KafkaRecord) (idem.Effect, error) {
				mu.Lock()
				inFlight++
				most = max(most, inFlight)
				order[rec.Partition] = append(order[rec.Partition], rec.Offset)
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
				return e.handler(rec)
			}, func(o *kafkaconsumer.Options) { o.Concurrency = tc.concurrency })
			var recs []events.KafkaRecord
			for i := range records {
				recs = append(recs, idemtest.KafkaRecord("c-"+strings.ReplaceAll(tc.name, " ", "-"), tc.partition(i), int64(i),
					fmt.Sprintf(`{"account":"acc-%d","cents":1}`, i%3), nil))
			}
			resp, err := h(context.Background(), idemtest.KafkaEvent(recs...))
			if err != nil || len(resp.BatchItemFailures) != 0 {
				t.Fatalf("want no failures, got %v, %v", resp.BatchItemFailures, err)
			}
			if most != tc.want {
				t.Errorf("most handlers in flight: want %d, got %d", tc.want, most)
			}
			for p, offsets := range order {
				if !slices.IsSorted(offsets) {
					t.Errorf("partition %d ran out of order: %v", p, offsets)
				}
			}
		})
	}
}

func TestDeadlineMargin(t *testing.T) {
	e := newEnv(t)
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	for i, tc := range []struct {
		name   string
		ctx    func(t *testing.T) context.Context
		margin time.Duration
		skip   bool
	}{
		{"within the default margin", deadlineIn(time.Second), 0, true},
		{"within a set margin", deadlineIn(time.Minute), 2 * time.Minute, true},
		{"outside the margin", deadlineIn(time.Minute), 0, false},
		{"no deadline", func(*testing.T) context.Context { return context.Background() }, 0, false},
		{"context done", func(*testing.T) context.Context { return cancelled }, 0, true},
	} {
		for _, mode := range modes {
			t.Run(tc.name+"/"+mode.name, func(t *testing.T) {
				topic := fmt.Sprint("deadline-", i, "-", len(mode.name))
				ev := idemtest.KafkaEvent(
					idemtest.KafkaRecord(topic, 0, 1, `{"account":"acc-1","cents":1}`, nil),
					idemtest.KafkaRecord(topic, 0, 2, `{"account":"acc-1","cents":1}`, nil),
					idemtest.KafkaRecord(topic, 1, 1, `{"account":"acc-1","cents":1}`, nil),
				)
				before, claims := e.Balance(t, "acc-1"), e.Claims(t)
				e.seen.take()
				got := e.run(t, tc.ctx(t), ev, mode.opt, func(o *kafkaconsumer.Options) { o.DeadlineMargin = tc.margin })
				if !tc.skip {
					checkFailed(t, got)
					return
				}
				checkFailed(t, got, topic+"-0@1", topic+"-0@2", topic+"-1@1")
				for _, r := range []string{topic + "-0@1", topic + "-0@2", topic + "-1@1"} {
					if e.runs.ran(r) {
						t.Errorf("%s ran within the deadline margin", r)
					}
				}
				if b, c := e.Balance(t, "acc-1"), e.Claims(t); b != before || c != claims {
					t.Errorf("balance %d → %d, claims %d → %d: want no change", before, b, claims, c)
				}
				checkOutcomes(t, e.seen.take(), map[idem.Outcome]int{idem.Failed: 3})
				if !strings.Contains(e.logs.String(), "the deadline is near") {
					t.Errorf("skipped records are not logged:\n%s", e.logs.String())
				}
			})
		}
	}
}

func TestRunningRecordsStopAtHalfTheMargin(t *testing.T) {
	e := newEnv(t)
	deadline := time.Now().Add(time.Hour)
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	var got time.Time
	h := newHandler(t, e.store, func(ctx context.Context, rec events.KafkaRecord) (idem.Effect, error) {
		got, _ = ctx.Deadline()
		return e.handler(rec)
	}, func(o *kafkaconsumer.Options) { o.DeadlineMargin = 10 * time.Minute })
	if resp, err := h(ctx, idemtest.KafkaEvent(rec(0, 1, `{"account":"acc-9","cents":1}`, ""))); err != nil || len(resp.BatchItemFailures) != 0 {
		t.Fatalf("want no failures, got %v, %v", resp.BatchItemFailures, err)
	}
	if want := deadline.Add(-5 * time.Minute); !got.Equal(want) {
		t.Errorf("handler's deadline: want %v, got %v", want, got)
	}
}

func deadlineIn(d time.Duration) func(t *testing.T) context.Context {
	return func(t *testing.T) context.Context {
		ctx, cancel := context.WithDeadline(context.Background(), time.Now().Add(d))
		t.Cleanup(cancel)
		return ctx
	}
}
