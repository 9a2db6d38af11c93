package outbox_test

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/idemkit/kit/idem/internal/wire"
	"github.com/idemkit/kit/idem/outbox"
)

// batch is n outbox records, record i bound for dest(i) in message group
// group(i).
func batch(n int, dest, group func(int) string) []events.DynamoDBEventRecord {
	var recs []events.DynamoDBEventRecord
	for i := range n {
		rec := record(i, dest(i), fmt.Sprint(`{"n":`, i, `}`))
		rec.Change.NewImage[wire.GroupAttr] = events.NewStringAttribute(group(i))
		recs = append(recs, rec)
	}
	return recs
}

func to(dest string) func(int) string { return func(int) string { return dest } }

// byTen: records 0–9 in one group, 10–19 in another, 20–29 in the first…
func byTen(i int) string { return "g" + strconv.Itoa(i/10%2) }

// TestRelayParallel: a batch's calls go out together, and still the answer
// is the first record not sent, every record before it was sent, and a
// FIFO group's calls go one at a time, in stream order, none after one
// failed. The fakes hold calls back until others returned, so the calls
// finish in the order each case needs, with no timing.
func TestRelayParallel(t *testing.T) {
	fifo := queue + ".fifo"
	cases := []struct {
		name        string
		records     []events.DynamoDBEventRecord
		concurrency int
		script      func(*script)
		wantFail    int      // the record answered, or -1
		wantSent    []string // ids after the answer that must have been sent
		wantNotSent []string // ids no call may carry
		wantLevel   string   // the answer's log level
	}{
		{name: "an early call fails after a later one succeeded", records: batch(30, to(queue), byTen),
			script: func(s *script) { s.waitFor["id-00"], s.failEntry["id-04"] = "id-20", true },
			// The calls after it went out with it and are sent again on the retry.
			wantFail: 4, wantSent: []string{"id-10", "id-19", "id-20", "id-29"}, wantLevel: "WARN"},
		{name: "a later call fails while an early one, which succeeds, is in flight", records: batch(30, to(queue), byTen),
			script:   func(s *script) { s.waitFor["id-00"], s.failCall["id-20"] = "id-20", true },
			wantFail: 20, wantLevel: "WARN"},
		{name: "two calls fail, the later one last", records: batch(30, to(queue), byTen),
			script:   func(s *script) { s.failEntry["id-04"], s.waitFor["id-20"], s.failCall["id-20"] = true, "id-00", true },
			wantFail: 4, wantLevel: "WARN"},
		{name: "two calls fail, the earlier one last", records: batch(30, to(queue), byTen),
			script:   func(s *script) { s.failEntry["id-04"], s.waitFor["id-00"], s.failCall["id-20"] = true, "id-20", true },
			wantFail: 4, wantLevel: "WARN"},
		{name: "Concurrency 1: no call after a failure", records: batch(30, to(queue), byTen), concurrency: 1,
			script:   func(s *script) { s.failEntry["id-14"] = true },
			wantFail: 14, wantNotSent: []string{"id-20"}, wantLevel: "WARN"},
		{name: "a panic in a send fails its call's first record", records: batch(30, to(queue), byTen),
			script:   func(s *script) { s.waitFor["id-10"], s.panicCall["id-10"] = "id-20", true },
			wantFail: 10, wantSent: []string{"id-20", "id-29"}, wantLevel: "ERROR"},
		{name: "a FIFO group's later call waits for its earlier one", records: batch(40, to(fifo), byTen),
			// Without the wait, 20–29 would go out beside 00–09, held back.
			script:   func(s *script) { s.waitFor["id-00"] = "id-10" },
			wantFail: -1},
		{name: "FIFO groups spread over every call", records: batch(40, to(fifo), func(i int) string { return "g" + strconv.Itoa(i%3) }),
			wantFail: -1},
		{name: "a FIFO group whose call failed sends none of its later items", records: batch(40, to(fifo), byTen),
			script:   func(s *script) { s.waitFor["id-00"], s.failEntry["id-05"] = "id-10", true },
			wantFail: 5, wantSent: []string{"id-10", "id-19"}, wantNotSent: []string{"id-20", "id-29"}, wantLevel: "WARN"},
		{name: "a standard queue does not wait for a FIFO group", records: batch(40, func(i int) string {
			return map[int]string{0: fifo, 1: queue}[i/10%2]
		}, to("g")),
			// 00–09 returns only after 30–39, to the standard queue, did.
			script:   func(s *script) { s.waitFor["id-00"] = "id-30" },
			wantFail: -1},
		{name: "a FIFO group beside events and a standard queue", records: batch(60, func(i int) string {
			return []string{fifo, "eventbridge:bus", queue}[i/10%3]
		}, to("g")),
			script:   func(s *script) { s.waitFor["id-00"], s.failEntry["id-05"] = "id-20", true },
			wantFail: 5, wantSent: []string{"id-10", "id-20"}, wantNotSent: []string{"id-30"}, wantLevel: "WARN"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second) // a guard against a hang, not a measure
			defer cancel()
			sc := newScript()
			if c.script != nil {
				c.script(sc)
			}
			var logs strings.Builder
			r, err := outbox.New(func(o *outbox.Options) {
				o.SQS, o.EventBridge = &fakeSQS{script: sc}, &fakeEvents{script: sc}
				o.Concurrency = c.concurrency
				o.Logger = slog.New(slog.NewTextHandler(&logs, nil))
			})
			if err != nil {
				t.Fatal(err)
			}
			resp, err := r.Handle(ctx, events.DynamoDBEvent{Records: c.records})
			if err != nil {
				t.Fatal(err)
			}
			got, want := failures(resp), []string{}
			if c.wantFail >= 0 {
				want = []string{c.records[c.wantFail].Change.SequenceNumber}
			}
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("failures: want %v, got %v", want, got)
			}
			if c.wantLevel != "" && !strings.Contains(logs.String(), "level="+c.wantLevel) {
				t.Errorf("want the answer logged at %s, got %q", c.wantLevel, logs.String())
			}
			sent := sc.sent()
			for i := range c.records {
				if id := fmt.Sprintf("id-%02d", i); (c.wantFail < 0 || i < c.wantFail) && !sent[id] {
					t.Errorf("record %d is before the answer %v and was not sent", i, got)
				}
			}
			for _, id := range c.wantSent {
				if !sent[id] {
					t.Errorf("%s: want it sent beside the failure, it was not", id)
				}
			}
			carried := map[string]bool{}
			for _, cl := range sc.byStream() {
				for _, id := range cl.ids {
					carried[id] = true
				}
			}
			for _, id := range c.wantNotSent {
				if carried[id] {
					t.Errorf("%s: a call carried it, want none to", id)
				}
			}
			if len(sc.overlaps) > 0 {
				t.Errorf("FIFO group calls in flight at once: %q", sc.overlaps)
			}
			// Each group's ids, in the order its calls started: stream order.
			groups := map[string][]string{}
			for _, cl := range sc.calls {
				for k, g := range cl.groups {
					groups[g] = append(groups[g], cl.ids[k])
				}
			}
			for g, ids := range groups {
				if !slices.IsSorted(ids) {
					t.Errorf("group %s sent out of stream order: %v", g, ids)
				}
			}
		})
	}
}

// TestRelayConcurrencyBound: with enough calls to make, the relay has
// exactly Options.Concurrency in flight at its peak, never more. The fake
// holds each call until that many are in flight, then lets them go one
// at a time (script.hold).
func TestRelayConcurrencyBound(t *testing.T) {
	for _, c := range []struct {
		name        string
		concurrency int
		records     int
		wantPeak    int
	}{
		{"one at a time", 1, 100, 1},
		{"three", 3, 100, 3},
		{"the default, 10", 0, 100, 10},
		{"the default with 15 calls to make", 0, 150, 10},
		{"more than there are calls", 16, 100, 10},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second) // a guard against a hang, not a measure
			defer cancel()
			sc := newScript()
			sc.hold, sc.total = c.wantPeak, (c.records+9)/10
			r, err := outbox.New(func(o *outbox.Options) {
				o.SQS, o.Concurrency, o.Logger = &fakeSQS{script: sc}, c.concurrency, slog.New(slog.DiscardHandler)
			})
			if err != nil {
				t.Fatal(err)
			}
			var recs []events.DynamoDBEventRecord
			for n := range c.records {
				recs = append(recs, record(n, queue, "b"))
			}
			resp, err := r.Handle(ctx, events.DynamoDBEvent{Records: recs})
			if err != nil || len(resp.BatchItemFailures) != 0 {
				t.Fatalf("want every record sent, got %v, %v", err, failures(resp))
			}
			if sc.peak != c.wantPeak || len(sc.calls) != (c.records+9)/10 {
				t.Errorf("want %d calls, at most %d in flight, got %d calls, at most %d", (c.records+9)/10, c.wantPeak, len(sc.calls), sc.peak)
			}
			t.Logf("%d calls, peak in flight %d", len(sc.calls), sc.peak)
		})
	}
}

// TestRelayDeadlineMargin: inside the margin only the batch's first call
// starts, however many may be in flight, and the answer is the first
// record of the next; outside it every call goes.
func TestRelayDeadlineMargin(t *testing.T) {
	for _, c := range []struct {
		name        string
		concurrency int
		margin      time.Duration // the deadline is a minute away
		wantCalls   int
		wantFail    []string
	}{
		{"inside the margin, one at a time", 1, 2 * time.Minute, 1, []string{"1010"}},
		{"inside the margin, 10 at a time", 10, 2 * time.Minute, 1, []string{"1010"}},
		{"outside it", 10, 2 * time.Second, 3, []string{}},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
			defer cancel()
			sc := newScript()
			r, err := outbox.New(func(o *outbox.Options) {
				o.SQS, o.Concurrency, o.DeadlineMargin, o.Logger = &fakeSQS{script: sc}, c.concurrency, c.margin, slog.New(slog.DiscardHandler)
			})
			if err != nil {
				t.Fatal(err)
			}
			resp, err := r.Handle(ctx, events.DynamoDBEvent{Records: batch(30, to(queue), byTen)})
			if err != nil || fmt.Sprint(failures(resp)) != fmt.Sprint(c.wantFail) || len(sc.calls) != c.wantCalls {
				t.Errorf("want %d call(s) and failures %v, got %d and %v, %v", c.wantCalls, c.wantFail, len(sc.calls), failures(resp), err)
			}
		})
	}
}

func TestNewRefusesNegativeConcurrency(t *testing.T) {
	_, err := outbox.New(func(o *outbox.Options) { o.SQS, o.Concurrency = &fakeSQS{script: newScript()}, -1 })
	if err == nil || !strings.Contains(err.Error(), "Options.Concurrency") {
		t.Fatalf("want an error naming Options.Concurrency, got %v", err)
	}
}
