package idem

import (
	"context"
	"sync/atomic"

	"github.com/idemkit/kit/idem/internal/seam"
)

// A delivery's transaction sent beside the read of its claim
// (readfirst.go): whichever answers first with what decides answers the
// delivery.

// txOutcome is what a transaction sent beside a read came to.
type txOutcome struct {
	res   Result
	err   error
	panic any
}

// commitBesideRead commits rec and eff as commitEffect does, and answers
// from the read of the claim instead when the read first finds a final
// claim made before this delivery's: a duplicate then takes the read's
// time.
func (s *Store) commitBesideRead(ctx context.Context, id, rec Record, eff Effect, read *claimRead) (Result, error) {
	stored, found := read.foundNow() // it came back while the handler ran: no transaction at all
	if !found {
		var o txOutcome
		if o, found = s.commitUnlessRead(ctx, rec, eff, read); !found {
			if o.panic != nil {
				panic(o.panic) // a client's, as on the caller's goroutine without a read
			}
			return o.res, o.err
		}
		stored = read.stored
	}
	return s.storedAnswer(id, stored)
}

// commitUnlessRead sends the transaction and returns what it came to, or
// that the read found the claim first (found): the transaction, whose
// claim's condition then fails, runs to its end unwaited for (a call cut
// short would close its connection); one that commits all the same, the
// claim having been deleted by hand meanwhile, is the answer when it is
// known in time, and logged at WARN when not.
func (s *Store) commitUnlessRead(ctx context.Context, rec Record, eff Effect, read *claimRead) (o txOutcome, found bool) {
	own, _ := seam.Delivery(ctx).(*deliveryTrace)
	var sends *deliveryTrace // the transaction's sends, the delivery's once it answers
	if own != nil {
		sends = &deliveryTrace{span: own.span, server: own.server}
	}
	txCtx, cancel := detached(ctx, sends)
	var answered atomic.Bool // from the read: nobody waits for the transaction
	done := make(chan txOutcome, 1)
	go func() {
		defer cancel()
		var o txOutcome
		defer func() {
			if v := recover(); v != nil {
				o.panic = v
			}
			done <- o
			if answered.Load() && o.err == nil && o.res.Outcome == Processed {
				s.opts.Logger.Warn("idem: a delivery answered Duplicate from its read of the claim committed after all: the claim was deleted meanwhile (idem forget?); the effect is applied once, under the new claim",
					"key", rec.Key, "claimedAt", rec.ClaimedAt)
			}
		}()
		o.res, o.err = s.commitEffect(txCtx, rec, eff)
	}()
	settle := func(o txOutcome) (txOutcome, bool) {
		if own != nil {
			own.sends += sends.sends
		}
		return o, false
	}
	select {
	case o := <-done:
		return settle(o)
	case <-read.done:
	}
	// A claim made at or after this delivery's own claim time may be its
	// own: the read can reach DynamoDB after the transaction committed and
	// before its answer is back. Then the transaction's answer decides.
	if !read.found || !read.stored.ClaimedAt.Before(rec.ClaimedAt) {
		return settle(<-done)
	}
	answered.Store(true)
	select {
	case o := <-done: // it came back meanwhile: its answer, should it have committed
		if o.panic != nil || o.err == nil && o.res.Outcome == Processed {
			return settle(o)
		}
	default:
	}
	return txOutcome{}, true
}
