package idem

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
)

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
// Conflicts and throttling are retried with backoff as in Process, and
// count against Options.MaxAttempts per message; only the messages a
// conflict or throttling blamed wait out the backoff. The others of their
// transaction are sent again at once, and a message whose key an earlier
// one has just committed is settled without waiting, so a deadline too near
// for the backoff fails only the blamed messages.
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
	b := &batchRun{s: s, out: make([]BatchResult, len(msgs)), known: make(map[string]Record, len(msgs)), retries: newRetries()}
	ids := make([]Record, len(msgs))
	classes := make([]rateKey, len(msgs)) // as each message came, before the batch settled its key
	handler := func(i int) Handler {
		if h == nil {
			return nil
		}
		return func(ctx context.Context, m Message) (Effect, error) { return h(ctx, i, m) }
	}
	// The keys this batch leads in this process, and the messages whose
	// keys another delivery leads (or an earlier message of the batch):
	// those wait for it, once this batch's own have landed, so that two
	// batches waiting on each other's keys cannot both wait.
	leads := make([]*keyCall, len(msgs))
	traces := make([]*deliveryTrace, len(msgs))
	defer func() {
		for _, t := range traces {
			t.endAfterPanic()
		}
	}()
	ctxs := make([]context.Context, len(msgs))
	var waiters []waiter
	var pending []*entry
	msgs = slices.Clone(msgs) // the caller's, which get their tenants here
	for i, msg := range msgs {
		msg = withTenant(ctx, msg)
		msgs[i] = msg
		ctxs[i], traces[i] = s.startDelivery(ctx, msg, i)
		id, err := s.identify(msg)
		ids[i], classes[i] = id, s.classOf(msg, id.Key)
		if err != nil {
			b.out[i].Err = err
			continue
		}
		if stored, ok := s.cache.get(id.Key, s.opts.Now()); ok {
			res, err := s.answerKnown(msg, id, stored)
			b.out[i] = BatchResult{Result: res, Err: err}
			continue
		}
		c, lead := s.inflight.join(id.Key)
		if !lead {
			waiters = append(waiters, waiter{i, id, c})
			continue
		}
		leads[i] = c
		defer leads[i].finishUnlessDone()
		rec, eff, err := s.prepare(ctxs[i], msg, id, handler(i))
		if err != nil {
			b.out[i].Err = err
			continue
		}
		pending = append(pending, &entry{i: i, rec: rec, eff: eff, writes: eff.Writes, c: claimAction{s.claim, s.claimFailed}, trace: traces[i]})
	}
	if len(pending) > 0 {
		if err := s.checkTable(ctx, pending[0].rec.Key); err != nil {
			for _, e := range pending {
				b.out[e.i].Err = err
			}
			pending = nil
		}
	}
	b.measure(pending)
	for len(pending) > 0 || len(b.waiting) > 0 {
		if len(pending) == 0 {
			// Only conflicted messages are left: back off, then send them.
			if err := b.s.sleep(ctx, b.backoff, b.retries.until(ctx)); err != nil {
				for _, e := range b.waiting {
					if stored, ok := b.known[e.rec.Key]; ok {
						b.settleAgainst(e, stored)
						continue
					}
					b.done(e, Result{}, e.retries.gaveUp(e.rec.Key, e.sends, e.refusal))
				}
				break
			}
			pending, b.waiting, b.backoff = b.waiting, nil, 0
		}
		pending = b.round(ctx, pending)
	}
	for i, msg := range msgs {
		if r := &b.out[i]; r.Err == nil && r.Result.Outcome == Duplicate && !r.Result.Cached { // the cache's answers are replayed
			if err := replay(msg, ids[i].Key, r.Result.Record); err != nil {
				*r = BatchResult{Err: err}
			}
		}
		if leads[i] != nil {
			leads[i].finish(b.out[i].Result, b.out[i].Err)
		}
	}
	alone := make([]bool, len(msgs)) // waiters run on their own: counted as they ran
	for _, w := range waiters {
		var res Result
		stored, known, err := w.c.wait(ctxs[w.i])
		switch {
		case err != nil:
			err = &RetryableError{Key: w.id.Key, Err: err}
		case known:
			res, err = s.answerKnown(msgs[w.i], w.id, stored)
		default: // its leader settled nothing: run it alone, as Process would
			res, err = s.deliver(ctxs[w.i], msgs[w.i], w.id, handler(w.i))
			alone[w.i] = true
		}
		b.out[w.i] = BatchResult{Result: res, Err: err}
	}
	for i, msg := range msgs {
		if !alone[i] {
			s.rates.count(classes[i], b.out[i].Result, b.out[i].Err)
		}
		s.settle(ctxs[i], traces[i], msg, ids[i], b.out[i].Result, b.out[i].Err)
	}
	return b.out
}

// waiter is a message of a batch whose key another delivery leads.
type waiter struct {
	i  int
	id Record
	c  *keyCall
}

// entry is one message of a batch on its way to a commit.
type entry struct {
	i      int
	rec    Record
	eff    Effect
	writes []types.TransactWriteItem // eff.Writes; none while a rejection is recorded
	rej    *RejectedError            // the rejection being recorded

	items   []types.TransactWriteItem // the claim, then writes
	targets []target                  // the items they touch; key "" is a whole table
	incs    []increment               // of each of items that is an increment (increment.go), else nil
	size    int

	trace   *deliveryTrace // the message's span
	c       claimAction    // how its claim is made: afresh, or over an ended lease
	over    bool           // its claim takes over a pending claim whose lease ended
	sends   int            // requests that carried it, the SDK's retries included
	retries retries        // of the sends cancelled by its own contention or throttling
	refusal error          // the last of those cancellations
	alone   bool           // in a transaction of its own, after the server refused a shared one
}

// batchRun is one ProcessBatch call's state.
type batchRun struct {
	s   *Store
	out []BatchResult
	// known holds the claim records this batch committed or found, by key,
	// so later messages with the same key settle without a call.
	known map[string]Record
	// waiting holds the messages that wait out a backoff after a conflict
	// or throttling, and later messages with their keys; backoff is the
	// most refusals one of them has met.
	waiting []*entry
	backoff int
	// retries times the batch's contention: it is retried until the
	// context's deadline, less a reserve, as in Process.
	retries retries
}

// round sends the pending entries in as few transactions as fit and
// returns those to send again at once; those to send after a backoff go to
// b.waiting.
func (b *batchRun) round(ctx context.Context, pending []*entry) []*entry {
	slices.SortFunc(pending, func(x, y *entry) int { return x.i - y.i })
	var (
		txs     []*tx
		taken   = map[string]bool{}
		waiting = map[string]bool{}
		next    []*entry
	)
	for _, e := range b.waiting {
		waiting[e.rec.Key] = true
	}
	for _, e := range pending {
		switch stored, ok := b.known[e.rec.Key]; {
		case ok:
			b.settleAgainst(e, stored)
		case waiting[e.rec.Key]: // an earlier message with its key waits: so does it
			b.waiting = append(b.waiting, e)
		case taken[e.rec.Key]: // DynamoDB refuses two actions on one claim
			next = append(next, e)
		default:
			taken[e.rec.Key] = true
			place(&txs, e)
		}
	}
	for _, t := range txs {
		next = append(next, b.send(ctx, t.entries)...)
	}
	return next
}

// send commits es in one transaction. It settles the entries whose outcome
// it learns, puts those blamed for a conflict or throttling in b.waiting,
// and returns the others, to be sent again at once.
func (b *batchRun) send(ctx context.Context, es []*entry) (again []*entry) {
	items, at, ok := actions(es)
	if !ok { // a sum past DynamoDB's precision: each message goes alone
		for _, e := range es {
			e.alone = true
		}
		return es
	}
	start := time.Now()
	unlock, err := b.s.items.lock(ctx, written(es))
	if err != nil {
		for _, e := range es {
			b.done(e, Result{}, &ContendedError{Key: e.rec.Key, Attempts: e.sends, Waited: time.Since(start), Err: err})
		}
		return nil
	}
	defer unlock()
	// ClientRequestToken stays nil, as in commit: the SDK's retries reuse it.
	sent := sendLog{attempts: 1}
	// The batch's transaction is its messages' call: a span of its own,
	// linked to each message's delivery span.
	var links []trace.Link
	for _, e := range es {
		if e.trace != nil {
			links = append(links, trace.Link{SpanContext: e.trace.span.SpanContext()})
			e.trace.sends++
		}
	}
	cctx, span := ctx, trace.Span(nil)
	if len(links) > 0 {
		cctx, span = b.s.tracer.Start(ctx, "DynamoDB.TransactWriteItems", trace.WithSpanKind(trace.SpanKindClient), trace.WithLinks(links...),
			trace.WithAttributes(attribute.String("rpc.system", "aws-api"), attribute.String("rpc.service", "DynamoDB"), attribute.String("rpc.method", "TransactWriteItems"),
				attribute.String("db.system.name", "aws.dynamodb"), attribute.StringSlice("aws.dynamodb.table_names", tablesOf(items)), attribute.Int("idem.batch.message_count", len(es))))
	}
	_, err = b.s.client.TransactWriteItems(cctx, &dynamodb.TransactWriteItemsInput{TransactItems: items}, sent.option)
	endCall(span, err)
	for _, e := range es {
		e.sends += sent.count()
	}
	if err == nil {
		for _, e := range es {
			rec := e.rec
			rec.keyItem = nil // the Store's own: a Result's Record is the record as stored
			b.done(e, Result{Outcome: Processed, Record: rec}, nil)
		}
		return nil
	}
	var tce *types.TransactionCanceledException
	readable := errors.As(err, &tce) && len(tce.CancellationReasons) == len(items)
	if len(es) > 1 && !readable && (tce != nil || isValidationException(err) || isNotFound(err)) {
		// The server refused what the packing let through, or its reasons
		// cannot be told apart (nor which message's table is missing):
		// each message goes alone, as in Process.
		for _, e := range es {
			e.alone = true
		}
		return es
	}
	if !readable {
		for _, e := range es {
			if b.settle(ctx, e, err, &sent) {
				again = append(again, e)
			}
		}
		return again
	}
	culprits := 0
	var innocents []*entry
	for k, e := range es {
		// e's own view of the cancellation: the reason of each of its
		// items, a shared increment's for each message that shares it.
		reasons := make([]types.CancellationReason, len(e.items))
		for j, a := range at[k] {
			reasons[j] = tce.CancellationReasons[a]
		}
		if innocent(reasons) {
			innocents = append(innocents, e)
			continue
		}
		culprits++
		own := &types.TransactionCanceledException{Message: tce.Message, CancellationReasons: reasons}
		if b.settle(ctx, e, own, &sent) {
			again = append(again, e)
		}
	}
	if culprits == 0 { // a cancellation that blames no action: give up, as commit does
		for _, e := range innocents {
			b.done(e, Result{}, &StoreError{Key: e.rec.Key, Err: err})
		}
		return again
	}
	return append(again, innocents...)
}

func innocent(reasons []types.CancellationReason) bool {
	for _, r := range reasons {
		if c := aws.ToString(r.Code); c != "" && c != "None" {
			return false
		}
	}
	return true
}

func isValidationException(err error) bool {
	var ae smithy.APIError
	return errors.As(err, &ae) && ae.ErrorCode() == "ValidationException"
}

// settle reads err, the cancellation of e's own actions or the call's
// error, as commit does. It says whether e is to be sent again at once, to
// record its rejection; after a conflict or throttling within MaxAttempts,
// e goes to b.waiting instead.
func (b *batchRun) settle(ctx context.Context, e *entry, err error, sent *sendLog) bool {
	retry := retryable(err)
	var res Result
	if !retry {
		res, err = b.s.failure(ctx, e.c, e.rec, e.writes, err, sent)
	}
	var rej *RejectedError
	var re *RetryableError
	var lh *LeaseHeldError
	switch {
	case !e.over && errors.As(err, &lh) && lh.ended(b.s.opts.Now()): // as in Process
		e.c, e.over = b.s.takeover(lh.stored), true
		b.measure([]*entry{e})
		return true
	case retry:
		e.retries.start, e.refusal = b.retries.start, err
		if e.retries.refused(ctx, b.s, err) {
			b.waiting = append(b.waiting, e)
			b.backoff = max(b.backoff, e.retries.refusals)
			return false
		}
		err = e.retries.gaveUp(e.rec.Key, e.sends, err)
	case errors.As(err, &re):
		re.Attempts = e.sends // every send of this message, not just this call's
	case e.rej == nil && e.eff.Rejected != nil && errors.As(err, &rej):
		rec, rerr := b.s.rejection(e.rec, e.eff, rej)
		if rerr != nil {
			err = rerr
			break
		}
		e.rec, e.writes, e.rej = rec, nil, rej
		b.measure([]*entry{e})
		return true
	}
	b.done(e, res, err)
	return false
}

// settleAgainst settles e, whose key an earlier message of the batch
// claimed or found claimed as stored, as the claim's condition would have.
func (b *batchRun) settleAgainst(e *entry, stored Record) {
	stored.Response = slices.Clone(stored.Response) // the earlier message's Result has the same bytes
	res, err := b.s.storedAnswer(e.rec, stored)
	b.done(e, res, err)
}

func (b *batchRun) done(e *entry, res Result, err error) {
	if err == nil && e.rej != nil && res.Outcome == Processed {
		res.Outcome, res.Rejection = Rejected, e.rej
	}
	b.out[e.i] = BatchResult{Result: res, Err: err}
	b.s.cacheSettled(res, err)
	if rec, ok := settledClaim(res, err); ok {
		b.known[e.rec.Key] = rec
	}
}
