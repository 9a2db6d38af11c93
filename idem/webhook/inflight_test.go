package webhook_test

import (
	"context"
	"maps"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/idemkit/kit/idem"
	"github.com/idemkit/kit/idem/webhook"
)

// held is a Receiver whose Handler credits as creditHandler does once
// release is closed, after telling entered; calls counts its runs.
type held struct {
	r        *webhook.Receiver
	entered  chan struct{}
	release  chan struct{}
	calls    atomic.Int32
	released atomic.Bool
}

func newHeld(t *testing.T, e *env, optFns ...func(*webhook.Options)) *held {
	t.Helper()
	h := &held{entered: make(chan struct{}, 1), release: make(chan struct{})}
	credit := creditHandler(e.Accounts)
	r, err := webhook.New(e.store, func(ctx context.Context, req webhook.Request) (webhook.Response, idem.Effect, error) {
		h.calls.Add(1)
		h.entered <- struct{}{}
		<-h.release
		return credit(ctx, req)
	}, optFns...)
	if err != nil {
		t.Fatal(err)
	}
	h.r = r
	return h
}

// lead starts d's first delivery (HTTP API) and waits until its Handler
// runs; the answer arrives on the channel once released.
func (h *held) lead(t *testing.T, d delivery) <-chan answer {
	t.Helper()
	first := make(chan answer, 1)
	go func() { first <- sendV2(t, h.r, d) }()
	<-h.entered
	return first
}

func (h *held) free() {
	if h.released.CompareAndSwap(false, true) {
		close(h.release)
	}
}

// TestInFlightInThisProcessIs409: a delivery whose key another delivery
// in this process is running is answered 409 with Retry-After at once, on
// every entry, with no Handler run and counted InFlight; once the first
// has committed, the retry gets its answer, replayed.
func TestInFlightInThisProcessIs409(t *testing.T) {
	for _, en := range entries {
		t.Run(en.name, func(t *testing.T) {
			e := newEnv(t)
			h := newHeld(t, e)
			defer h.free()
			d := delivery{body: creditBody, headers: keyed("k-1")}
			first := h.lead(t, d)
			start := time.Now()
			got := en.send(context.Background(), t, h.r, d)
			took := time.Since(start)
			t.Logf("in flight in this process: %d, Retry-After %q, answered in %v", got.status, got.headers["Retry-After"], took)
			if got.status != 409 || got.headers["Retry-After"] != "1" || !strings.Contains(problemDetail(t, got), "still being processed") {
				t.Errorf("want 409 with Retry-After 1, got %d %v %s", got.status, got.headers, got.body)
			}
			if took > 5*time.Second { // a sanity bound: the 409 comes at once, the first is held for ever
				t.Errorf("the 409 took %v", took)
			}
			h.free()
			if a := <-first; a.status != 200 {
				t.Fatalf("the first delivery: %d %s", a.status, a.body)
			}
			if n := h.calls.Load(); n != 1 {
				t.Errorf("the 409 ran the Handler: %d runs", n)
			}
			if a := en.send(context.Background(), t, h.r, d); a.status != 200 || a.headers["Idempotent-Replayed"] != "true" {
				t.Errorf("the retry: want the replay, got %d %v %s", a.status, a.headers, a.body)
			}
			if b := e.Balance(t, "acc-9"); b != 500 {
				t.Errorf("want one credit of 500, got %d", b)
			}
			if !strings.Contains(e.log.String(), `"outcome":"InFlight"`) {
				t.Errorf("want the 409 logged InFlight, got %s", e.log.String())
			}
		})
	}
}

// TestInFlightWaitReplaysTheFirstAnswer: with InFlightWait, a delivery
// whose key another delivery in this process is running waits for it and
// is answered with its response, replayed, on every entry.
func TestInFlightWaitReplaysTheFirstAnswer(t *testing.T) {
	for _, en := range entries {
		t.Run(en.name, func(t *testing.T) {
			e := newEnv(t)
			h := newHeld(t, e, func(o *webhook.Options) { o.InFlightWait = 10 * time.Second })
			defer h.free()
			d := delivery{body: creditBody, headers: keyed("k-1")}
			first := h.lead(t, d)
			second := make(chan answer, 1)
			start := time.Now()
			go func() { second <- en.send(context.Background(), t, h.r, d) }()
			time.Sleep(200 * time.Millisecond) // the second delivery reaches the wait; not a timed assertion
			h.free()
			a, b := <-first, <-second
			took := time.Since(start)
			t.Logf("waited for the first: %d replayed=%s in %v", b.status, b.headers["Idempotent-Replayed"], took)
			want := maps.Clone(a.headers)
			want["Idempotent-Replayed"] = "true"
			if a.status != 200 || b.status != a.status || b.body != a.body || !reflect.DeepEqual(b.headers, want) {
				t.Errorf("want the first answer %d %v %s replayed, got %d %v %s", a.status, want, a.body, b.status, b.headers, b.body)
			}
			if h.calls.Load() != 1 || e.Balance(t, "acc-9") != 500 {
				t.Errorf("want 1 Handler run and one credit, got %d and %d", h.calls.Load(), e.Balance(t, "acc-9"))
			}
		})
	}
}

// TestInFlightWaitEndsBeforeTheLimit: the wait ends a second before API
// Gateway's 29 seconds, counted from the request's start as the event
// stamps it, and a second before the context's deadline; the delivery is
// then answered 409, well before the 10 s it was allowed.
func TestInFlightWaitEndsBeforeTheLimit(t *testing.T) {
	ago := func(d time.Duration) int64 { return time.Now().Add(-d).UnixMilli() }
	for _, tc := range []struct {
		name string
		send func(ctx context.Context, t *testing.T, r *webhook.Receiver, d delivery) answer
		ctx  func() (context.Context, context.CancelFunc)
	}{
		{"HTTP API, started 28.5 s ago", func(ctx context.Context, t *testing.T, r *webhook.Receiver, d delivery) answer {
			ev := d.v2()
			ev.RequestContext.TimeEpoch = ago(28500 * time.Millisecond)
			resp, _ := r.HandleV2(ctx, ev)
			return decodeAnswer(t, resp.StatusCode, resp.Headers, resp.Body, resp.IsBase64Encoded)
		}, nil},
		{"REST API, started 27.5 s ago", func(ctx context.Context, t *testing.T, r *webhook.Receiver, d delivery) answer {
			ev := d.v1()
			ev.RequestContext.RequestTimeEpoch = ago(27500 * time.Millisecond)
			resp, _ := r.HandleV1(ctx, ev)
			return decodeAnswer(t, resp.StatusCode, resp.Headers, resp.Body, resp.IsBase64Encoded)
		}, nil},
		{"net/http, a deadline 1.5 s away", sendHTTP, func() (context.Context, context.CancelFunc) {
			return context.WithTimeout(context.Background(), 1500*time.Millisecond)
		}},
		{"ALB, a deadline 1.5 s away", sendALB(false), func() (context.Context, context.CancelFunc) {
			return context.WithTimeout(context.Background(), 1500*time.Millisecond)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			h := newHeld(t, e, func(o *webhook.Options) { o.InFlightWait = 10 * time.Second })
			defer h.free()
			d := delivery{body: creditBody, headers: keyed("k-1")}
			first := h.lead(t, d)
			ctx, cancel := context.Background(), context.CancelFunc(func() {})
			if tc.ctx != nil {
				ctx, cancel = tc.ctx()
			}
			defer cancel()
			start := time.Now()
			got := tc.send(ctx, t, h.r, d)
			took := time.Since(start)
			t.Logf("%d, Retry-After %q, after %v", got.status, got.headers["Retry-After"], took)
			if got.status != 409 || got.headers["Retry-After"] != "1" {
				t.Errorf("want 409 with Retry-After 1, got %d %v %s", got.status, got.headers, got.body)
			}
			if took > 5*time.Second { // a sanity bound: 10 s allowed, about a second at most expected
				t.Errorf("the 409 took %v", took)
			}
			h.free()
			<-first
		})
	}
}
