package idem_test

import (
	"context"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemkit/kit/idem"
)

// TestResultsAreTheirCallersOwn: a Result's stored response is its
// caller's to change. A delivery answered from another one's outcome (a
// coalesced follower, a duplicate within one batch, the cache) shares no
// bytes with that delivery's Result or with the handler that made them.
func TestResultsAreTheirCallersOwn(t *testing.T) {
	const answer = "credited evt_001"
	// The handler answers from a buffer of its own, which it (or the
	// leader's caller) may overwrite after the delivery.
	handler := func(e *env, buf []byte, release <-chan struct{}, entered chan<- struct{}) idem.Handler {
		return func(ctx context.Context, m idem.Message) (idem.Effect, error) {
			if entered != nil {
				entered <- struct{}{}
				<-release
			}
			return idem.Effect{Writes: []types.TransactWriteItem{e.credit("acc-9", 500)}, Response: buf}, nil
		}
	}
	scribble := func(b []byte) {
		for i := range b {
			b[i] = 'X'
		}
	}
	for _, mode := range []struct {
		name    string
		process func(*idem.Store, context.Context, idem.Message, idem.Handler) (idem.Result, error)
	}{
		{"Process", (*idem.Store).Process},
		{"ProcessLeased", func(s *idem.Store, ctx context.Context, m idem.Message, h idem.Handler) (idem.Result, error) {
			return s.ProcessLeased(ctx, m, h)
		}},
	} {
		t.Run("coalesced follower of "+mode.name, func(t *testing.T) {
			e := newEnv(t)
			buf := []byte(answer)
			entered, release := make(chan struct{}, 1), make(chan struct{})
			type out struct {
				res idem.Result
				err error
			}
			leader, follower := make(chan out, 1), make(chan out, 1)
			go func() {
				res, err := mode.process(e.store, context.Background(), msg, handler(e, buf, release, entered))
				leader <- out{res, err}
			}()
			<-entered // the leader runs its handler: the follower waits for it
			go func() {
				res, err := mode.process(e.store, context.Background(), msg, handler(e, []byte("never"), nil, nil))
				follower <- out{res, err}
			}()
			time.Sleep(100 * time.Millisecond) // for the follower to join the leader's flight
			close(release)
			l, f := <-leader, <-follower
			if l.err != nil || f.err != nil || !f.res.Cached {
				t.Fatalf("want the leader's outcome and a coalesced follower, got %v %v and %+v %v", l.res.Outcome, l.err, f.res, f.err)
			}
			scribble(l.res.Record.Response)
			scribble(buf)
			if got := string(f.res.Record.Response); got != answer {
				t.Errorf("the follower's answer changed with the leader's: %q", got)
			}
		})
	}
	t.Run("duplicate within one batch", func(t *testing.T) {
		e := newEnv(t)
		buf := []byte(answer)
		out := e.store.ProcessBatch(context.Background(), []idem.Message{msg, msg}, func(ctx context.Context, _ int, m idem.Message) (idem.Effect, error) {
			return handler(e, buf, nil, nil)(ctx, m)
		})
		if out[0].Err != nil || out[1].Err != nil || out[1].Result.Outcome != idem.Duplicate {
			t.Fatalf("want Processed then Duplicate, got %+v", out)
		}
		scribble(out[0].Result.Record.Response)
		scribble(buf)
		if got := string(out[1].Result.Record.Response); got != answer {
			t.Errorf("the batch's duplicate changed with the first message's answer: %q", got)
		}
	})
	t.Run("cached", func(t *testing.T) {
		e := newEnv(t, func(o *idem.Options) { o.CacheSize = 10 })
		buf := []byte(answer)
		var answers []idem.Result
		for range 3 {
			res, err := e.store.Process(context.Background(), msg, handler(e, buf, nil, nil))
			if err != nil {
				t.Fatal(err)
			}
			answers = append(answers, res)
			scribble(res.Record.Response)
		}
		scribble(buf)
		if !answers[2].Cached || string(answers[2].Record.Response) != "XXXXXXXXXXXXXXXX" {
			t.Fatalf("want a cached answer, overwritten by its caller, got %+v", answers[2])
		}
		res, err := e.store.Process(context.Background(), msg, handler(e, buf, nil, nil))
		if err != nil || string(res.Record.Response) != answer {
			t.Errorf("the cache's answer changed with its callers': %q %v", res.Record.Response, err)
		}
	})
}
