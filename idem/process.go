package idem

import (
	"context"
	"errors"
	"fmt"
)

// One delivery's way through the Store: its claim identified, answered by
// the cache or by the handler's effect committed with the claim, the
// stored answer replayed to a duplicate, the outcome logged and counted.

// Process runs h for msg and commits the effect it describes together with
// msg's claim, in one TransactWriteItems.
//
// A nil error means the delivery is done: Processed, Duplicate (nothing
// applied; Result.Record.Response is the stored response), or Rejected (the
// effect's condition failed and Effect.Rejected recorded it). Any error
// means the delivery must be retried or dead-lettered: *InvalidError,
// *KeyReuseError, *RejectedError, *HandlerError, *PanicError or
// *StoreError (nothing committed), *ReplayError (a Duplicate whose
// Message.Replay failed; nothing applied), *LeaseHeldError (a ProcessLeased
// delivery of the message is running; nothing done), or *RetryableError
// (perhaps committed with its answer lost; the retry is then a
// Duplicate). A pending claim whose lease ended is committed over, in a
// second transaction: h calls nothing out.
//
// Deliveries of one key at once in this process (Lambda Managed Instances
// run several invokes in one process; a batch may carry a message twice)
// coalesce: one runs h and commits, the others wait for its outcome and
// are its Duplicates (Result.Cached), with no call of their own; when it
// fails, the next one runs.
func (s *Store) Process(ctx context.Context, msg Message, h Handler) (Result, error) {
	ctx, t := s.startDelivery(ctx, msg, -1)
	defer t.endAfterPanic()
	id, err := s.identify(msg)
	res, err := s.process(ctx, msg, id, err, h)
	s.obs.observe(ctx, msg, id.Key, res, err)
	t.end(id.Key, res, err)
	return res, err
}

// process is Process once msg is identified as id (or found invalid, err):
// answered by the cache, or by another delivery of its key in flight in
// this process, or run.
func (s *Store) process(ctx context.Context, msg Message, id Record, err error, h Handler) (Result, error) {
	if err != nil {
		return Result{}, err
	}
	if res, err, ok := s.cached(msg, id); ok {
		return res, err
	}
	fl, res, err, done := s.aboard(ctx, msg, id)
	if done {
		return res, err
	}
	defer fl.unlessLanded()
	if res, err, ok := s.peeked(ctx, msg, id); ok {
		fl.land(res, err)
		return res, err
	}
	res, err = s.run(ctx, msg, id, h)
	fl.land(res, err)
	return res, err
}

// run runs h for msg and commits its effect with msg's claim.
func (s *Store) run(ctx context.Context, msg Message, id Record, h Handler) (Result, error) {
	rec, eff, err := s.prepare(ctx, msg, id, h)
	if err != nil {
		return Result{}, err
	}
	res, err := s.finish(ctx, msg, claimant{s.claim, s.met}, rec, eff)
	if lh := (*LeaseHeldError)(nil); errors.As(err, &lh) && lh.ended(s.opts.Now()) {
		// A pending claim a lease-mode delivery left, its lease ended: this
		// handler calls nothing out, so it may commit over it.
		res, err = s.finish(ctx, msg, s.takeover(lh.stored), rec, eff)
	}
	return res, err
}

// cached answers a delivery whose claim the cache holds, as the claim's
// condition would (ok), replaying the stored record to a Duplicate.
func (s *Store) cached(msg Message, id Record) (Result, error, bool) {
	stored, ok := s.cache.get(id.Key, s.opts.Now())
	if !ok {
		return Result{}, nil, false
	}
	res, err := s.answerFrom(msg, id, stored)
	return res, err, true
}

// answerFrom answers a delivery from a claim it knows without a call (the
// cache's, or the one a coalesced delivery's leader left): a Duplicate,
// its stored record replayed, or a key reuse.
func (s *Store) answerFrom(msg Message, id, stored Record) (Result, error) {
	res, err := s.meet(id, stored)
	if err == nil {
		res.Cached = true
		err = replay(msg, id.Key, res.Record)
	}
	if err != nil {
		return Result{}, err
	}
	return res, nil
}

// finish commits rec and eff's writes under c's claim and, when a
// condition of the writes fails and eff.Rejected is set, the rejection in
// their place; it replays the stored record to a Duplicate.
func (s *Store) finish(ctx context.Context, msg Message, c claimant, rec Record, eff Effect) (Result, error) {
	res, err := s.commit(ctx, c, rec, eff.Writes)
	s.remember(res, err)
	var rej *RejectedError
	if eff.Rejected != nil && errors.As(err, &rej) {
		if rec, err = s.rejection(rec, eff, rej); err != nil {
			return Result{}, err
		}
		res, err = s.commit(ctx, c, rec, nil)
		s.remember(res, err)
		if err == nil && res.Outcome == Processed {
			res.Outcome, res.Rejection = Rejected, rej
		}
	}
	if err == nil && res.Outcome == Duplicate {
		err = replay(msg, rec.Key, res.Record)
	}
	if err != nil {
		return Result{}, err
	}
	return res, nil
}

// remember caches the record a commit left in DynamoDB, or found there.
func (s *Store) remember(res Result, err error) {
	if s.cache == nil {
		return
	}
	var kr *KeyReuseError
	switch {
	case err == nil:
		s.cache.put(res.Record)
	case errors.As(err, &kr) && kr.Stored.Outcome != Pending: // a pending claim may yet be released
		s.cache.put(kr.Stored)
	}
}

// replay runs msg.Replay on a Duplicate's stored record.
func replay(msg Message, key string, stored Record) error {
	if msg.Replay == nil {
		return nil
	}
	err := recoverPanic(key, "Message.Replay", func() error { return msg.Replay(stored) })
	if err == nil {
		return nil
	}
	if pe := (*PanicError)(nil); errors.As(err, &pe) {
		return err
	}
	return &ReplayError{Key: key, Err: err}
}

// rejection is rec recording rej as the message's outcome: a claim without
// the effect, whose response eff.Rejected gives.
func (s *Store) rejection(rec Record, eff Effect, rej *RejectedError) (Record, error) {
	var resp []byte
	err := recoverPanic(rec.Key, "Effect.Rejected", func() (err error) { resp, err = eff.Rejected(rej); return err })
	if pe := (*PanicError)(nil); err != nil && !errors.As(err, &pe) {
		err = &HandlerError{Key: rec.Key, Err: fmt.Errorf("Effect.Rejected: %w", err)}
	}
	if err != nil {
		return Record{}, err
	}
	rec.Outcome, rec.Response = Rejected, resp
	if len(rec.Response) > s.opts.MaxResponseBytes {
		return Record{}, &InvalidError{Key: rec.Key, Reason: fmt.Sprintf("rejection response is %d bytes; the limit is %d (Options.MaxResponseBytes)", len(rec.Response), s.opts.MaxResponseBytes)}
	}
	return rec, nil
}

// prepare runs h for msg, identified as id, validates the effect it
// describes and builds the claim record to commit with it.
func (s *Store) prepare(ctx context.Context, msg Message, id Record, h Handler) (Record, Effect, error) {
	eff, err := runHandler(withDelivery(ctx, msg, id.Key), msg, id.Key, h)
	if err != nil {
		return Record{}, Effect{}, err
	}
	now := s.opts.Now()
	rec := id
	rec.ClaimedAt, rec.ExpiresAt, rec.traceparent = now, now.Add(s.opts.retention()), traceParent(ctx)
	if err := s.validateEffect(rec, &eff, now); err != nil {
		return Record{}, Effect{}, err
	}
	rec.Outcome, rec.Response = Processed, eff.Response
	return rec, eff, nil
}

// runHandler runs h, a panic in it a *PanicError.
func runHandler(ctx context.Context, msg Message, key string, h Handler) (eff Effect, err error) {
	if h == nil {
		return Effect{}, &InvalidError{Key: key, Reason: "nil handler"}
	}
	err = recoverPanic(key, "the handler", func() error {
		var herr error
		if eff, herr = h(ctx, msg); herr != nil {
			return &HandlerError{Key: key, Err: herr}
		}
		return nil
	})
	if err != nil {
		return Effect{}, err
	}
	return eff, nil
}
