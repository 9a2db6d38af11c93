package idem

import (
	"context"
	"slices"
	"time"
)

// A delivery is one message on its way through a Store: identified by
// the key it claims; answered from what this process knows of the key
// (the cache, another delivery of the key running here) or from a read of
// its claim; else its handler describes the effect, which commits with
// the claim in one transaction (under a lease in lease mode); last, its
// outcome is settled: logged, counted and traced. Process, ProcessBatch
// and ProcessLeased take their deliveries along this one way, in modes.
type delivery struct {
	ctx   context.Context // its own: its span's
	msg   Message
	h     Handler
	key   claimKey
	class rateKey        // the deliveries like it, whose share of duplicates says whether it reads first
	trace *deliveryTrace // its span, nil when not traced
	lead  *keyCall       // its key's call in this process, when it leads it
	wait  *keyCall       // the call of its key another delivery here leads

	claim    Record                               // the claim its effect commits with
	rejected func(*RejectedError) ([]byte, error) // the effect's Rejected; its writes are tx.writes
	tx       txState                              // its way through the transactions

	res Result
	err error
}

// mode is how a call takes its deliveries: Process's (a read of the claim
// when deliveries like it are mostly duplicates), ProcessBatch's (as few
// transactions as fit, no read), or ProcessLeased's (a lease first).
type mode struct {
	batch bool
	lease *LeaseOptions
}

// Process runs h for msg and commits the effect it describes together with
// msg's claim, in one TransactWriteItems.
//
// A nil error means the delivery is done: Processed, Duplicate (nothing
// applied; Result.Record.Response is the stored response), or Rejected (the
// effect's condition failed and Effect.Rejected recorded it). Any error
// means the delivery must be retried or dead-lettered: *InvalidError,
// *KeyReuseError, *RejectedError, *HandlerError, *PanicError,
// *TableNotFoundError or *StoreError (nothing committed), *ReplayError (a
// Duplicate whose Message.Replay failed; nothing applied),
// *LeaseHeldError (a ProcessLeased delivery of the message is running;
// nothing done), *ContendedError (its items written by other transactions
// until its time ran out; nothing committed) or *RetryableError (perhaps
// committed with its answer lost; the retry is then a Duplicate). A
// pending claim whose lease ended is committed over, in a second
// transaction: h calls nothing out.
//
// Deliveries of one key at once in this process (Lambda Managed Instances
// run several invokes in one process; a batch may carry a message twice)
// coalesce: one runs h and commits, the others wait for its outcome and
// are its Duplicates (Result.Cached), with no call of their own; when it
// fails, the next one runs.
func (s *Store) Process(ctx context.Context, msg Message, h Handler) (Result, error) {
	d := s.begin(ctx, msg, h, -1)
	defer d.trace.endAfterPanic()
	s.deliver(ctx, []*delivery{d}, mode{})
	return d.res, d.err
}

// BatchHandler is a Handler that is also told the message's index in the
// batch, so an adapter can reach the event record the message came from.
type BatchHandler func(ctx context.Context, i int, msg Message) (Effect, error)

// BatchResult is what Process would have returned for one message of a
// batch.
type BatchResult struct {
	Result Result
	Err    error
}

// ProcessBatch is Process for many messages at once: it runs h for each
// message, one after another in batch order, then commits the claims and
// effects in as few TransactWriteItems as DynamoDB's limits allow (100
// actions, 4 MB, one action per item). A message's claim and effect always
// share one transaction, so no effect commits without its claim, and
// the i-th result is what Process would have returned for msgs[i], logged
// and counted the same way.
//
// A batch of new messages whose effects touch different items costs one
// call (per 100 actions or 4 MB). When a transaction is cancelled,
// its CancellationReasons (one per action, in order) tell which messages
// were duplicates, reused keys or rejected effects; those are settled and
// the rest are sent again, so a batch that holds duplicates costs two.
// Contention and throttling are retried with backoff as in Process; only
// the messages they blamed wait out the backoff. The others of their
// transaction are sent again at once, and a message whose key an earlier
// one has just committed is settled without waiting, so a deadline too near
// for the backoff fails only the blamed messages.
//
// A Put's item is named by its table's key attributes, which the batch's
// other writes on that table tell or, failing them, the table's
// description (one DescribeTable per table and Store, which needs
// dynamodb:DescribeTable); without either a Put is taken to touch its
// whole table, one such message a transaction.
//
// Two messages with the same key never share a transaction: the later
// waits for the earlier and, once the earlier's claim is known, is its
// Duplicate (or a *KeyReuseError) without a call of its own; so does a
// message whose key another delivery in this process is processing, once
// the batch's own messages are settled. Messages whose effects touch the
// same item go in separate transactions, sent one after another, but for
// increments (Update): one transaction carries several messages'
// increments of an item as one action, their sum, each message's claim
// beside it (ten credits to one account: one transaction of eleven
// actions).
//
// The messages of a batch commit in no particular order. A caller that
// must keep an order, such as a FIFO message group's, passes at most one
// message of each group per call.
func (s *Store) ProcessBatch(ctx context.Context, msgs []Message, h BatchHandler) []BatchResult {
	ds := make([]*delivery, len(msgs))
	defer func() {
		for _, d := range ds {
			if d != nil {
				d.trace.endAfterPanic()
			}
		}
	}()
	for i, msg := range msgs {
		var hi Handler
		if h != nil {
			hi = func(ctx context.Context, m Message) (Effect, error) { return h(ctx, i, m) }
		}
		ds[i] = s.begin(ctx, msg, hi, i)
	}
	s.deliver(ctx, ds, mode{batch: true})
	out := make([]BatchResult, len(ds))
	for i, d := range ds {
		out[i] = BatchResult{Result: d.res, Err: d.err}
	}
	return out
}

// begin starts msg's delivery: its tenant (the invoke's, when the message
// names none), its span (batch is its place in a batch, or -1), its claim
// key and its class of deliveries. A message that cannot be claimed has
// its error already.
func (s *Store) begin(ctx context.Context, msg Message, h Handler, batch int) *delivery {
	msg = withTenant(ctx, msg)
	d := &delivery{msg: msg, h: h}
	d.ctx, d.trace = s.startDelivery(ctx, msg, batch)
	d.key, d.err = s.identify(msg)
	d.class = s.classOf(msg, d.key.name)
	return d
}

// deliver takes ds along their way, then settles each: its outcome
// logged, counted and traced.
func (s *Store) deliver(ctx context.Context, ds []*delivery, m mode) {
	s.answer(ctx, ds, m)
	for _, d := range ds {
		s.rates.count(d.class, d.res, d.err)
		s.settle(d)
	}
}

// answer answers each of ds: from a claim this process knows, or as the
// leader of its key's call in this process, from a read of its claim or by
// committing its effect; then, once the leaders have answered, each
// delivery that waited for another of its key here, from the claim that
// one settled, or on its own when it settled none. A leader's claim goes
// into the cache before it is replayed to it; a panic past every recovery
// leaves the leaders' calls complete with nothing known, so that no
// delivery waits for ever.
func (s *Store) answer(ctx context.Context, ds []*delivery, m mode) {
	var leaders, waiters []*delivery
	for _, d := range ds {
		switch {
		case d.err != nil:
		case s.answerFromCache(d):
		default:
			if c, leads := s.calls.join(d.key.name); leads {
				d.lead, leaders = c, append(leaders, d)
			} else {
				d.wait, waiters = c, append(waiters, d)
			}
		}
	}
	defer func() {
		for _, d := range leaders {
			d.lead.completeIfLeft()
		}
	}()
	s.lead(ctx, leaders, m)
	for _, d := range leaders {
		s.remember(d.res, d.err)
		if d.err == nil && d.res.Outcome == Duplicate && !d.res.Cached {
			d.replay()
		}
		d.lead.complete(d.res, d.err)
	}
	alone := m
	alone.batch = false
	for _, d := range waiters {
		if !s.waitForLeader(d) {
			s.answer(ctx, []*delivery{d}, alone) // its leader settled nothing: it runs on its own
		}
	}
}

// lead answers deliveries whose keys they lead in this process: under a
// lease one at a time, else from a read of the claim (Process's mode) or
// by running their handlers and committing their effects with their
// claims.
func (s *Store) lead(ctx context.Context, ds []*delivery, m mode) {
	if m.lease != nil {
		for _, d := range ds {
			s.runLeased(d, *m.lease)
		}
		return
	}
	var commits []*delivery
	for _, d := range ds {
		if !m.batch {
			if stored, ok := s.readFirst(d); ok {
				d.res, d.err = answerFrom(d.key, stored)
				continue
			}
		}
		if s.prepare(d) {
			commits = append(commits, d)
		}
	}
	if len(commits) == 0 {
		return
	}
	if err := s.checkTable(commits[0].ctx, commits[0].key.name); err != nil {
		for _, d := range commits {
			d.err = err
		}
		return
	}
	s.commit(ctx, commits, m.batch)
}

// answerFromCache answers d from the claim the cache holds for its key,
// if it holds one.
func (s *Store) answerFromCache(d *delivery) bool {
	stored, ok := s.cache.get(d.key.name, s.opts.Now())
	if ok {
		d.answerKnown(stored)
	}
	return ok
}

// waitForLeader waits for the delivery that leads d's key in this process
// and answers d from the claim it settled; false when it settled none. A
// wait the adapter bounded (boundedWait) that runs out is an
// *InFlightError.
func (s *Store) waitForLeader(d *delivery) bool {
	waitCtx, bound := d.ctx, time.Duration(-1)
	if b, ok := boundedWait(d.ctx); ok {
		var cancel context.CancelFunc
		waitCtx, cancel = context.WithTimeout(d.ctx, b)
		defer cancel()
		bound = b
	}
	stored, known, err := d.wait.wait(waitCtx)
	switch {
	case err != nil && bound >= 0 && d.ctx.Err() == nil:
		d.err = &InFlightError{Key: d.key.name, Waited: bound, RetryAfter: inFlightRetry}
	case err != nil:
		d.err = &RetryableError{Key: d.key.name, Err: err}
	case known:
		d.answerKnown(stored)
	default:
		return false
	}
	return true
}

// answerKnown answers d from a claim known without a call (the cache's,
// or the one a delivery of its key here settled): a Duplicate, its record
// replayed, or a key reuse. The claim's bytes are d's own: its caller may
// change its Result.
func (d *delivery) answerKnown(stored Record) {
	stored.Response = slices.Clone(stored.Response)
	d.res, d.err = answerFrom(d.key, stored)
	if d.err != nil {
		return
	}
	d.res.Cached = true
	d.replay()
}

// replay runs the message's Replay on d's Duplicate.
func (d *delivery) replay() {
	if err := replay(d.msg, d.key.name, d.res.Record); err != nil {
		d.res, d.err = Result{}, err
	}
}
