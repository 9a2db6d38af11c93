package idem

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
)

// The commit: each delivery's claim and effect in one TransactWriteItems,
// the deliveries of a batch in as few as fit (pack.go), sent again while
// refusals leave them something to send (cancel.go says what a refusal
// means for each delivery).

// txState is a delivery's way through its commit's transactions.
type txState struct {
	kind       claimKind
	over       *Record                   // the pending claim an overEndedLease claim replaces
	writes     []types.TransactWriteItem // the effect's; none once a rejection is recorded
	writesSize int                       // their size, as validate measured it
	rej        *RejectedError            // the rejection recorded in the effect's place

	items   []types.TransactWriteItem // the claim, then writes
	targets []target                  // the items they touch; key "" is a whole table
	incs    []increment               // of each of items that is an increment (increment.go), else nil
	size    int

	sends   int     // requests that carried it, the SDK's retries included
	retries retries // of the sends refused by its own contention or throttling
	refusal error   // the last of those refusals
	alone   bool    // in a transaction of its own, after the server refused a shared one
	order   int     // its place in the commit, which packing keeps
}

// commitRun is one commit's state.
type commitRun struct {
	s     *Store
	ctx   context.Context
	batch bool // the deliveries' transaction is their batch's (linked spans), not one's own (a child span)
	merge bool // several deliveries, whose increments of one item may merge: one's need no reading
	held  bool // one delivery's items, locked for the whole commit (not each send)
	// known holds the claims this commit made or found, by key, so later
	// deliveries of the same key answer without a call.
	known map[string]Record
	// waiting holds the deliveries that wait out a backoff after
	// contention or throttling, and later ones of their keys; backoff is
	// the most refusals one of them has met.
	waiting []*delivery
	backoff int
	retries retries // times the commit's contention
}

// commit commits each of ds's effect with its claim (as its tx.kind
// claims), in one transaction each or, in a batch, as few as fit, and
// answers each of them. It is the one place the Store sends
// TransactWriteItems.
func (s *Store) commit(ctx context.Context, ds []*delivery, batch bool) {
	c := &commitRun{s: s, ctx: ctx, batch: batch, merge: len(ds) > 1, retries: newRetries()}
	for i, d := range ds {
		d.tx.order = i
	}
	pending := c.measure(ds)
	if len(ds) == 1 {
		// One delivery holds its items through its backoff too: this
		// process's other deliveries of them wait their turn here rather
		// than send into the contention that refused it.
		unlock, ok := c.lock(ds)
		if !ok {
			return
		}
		defer unlock()
		c.held = true
	}
	for len(pending) > 0 || len(c.waiting) > 0 {
		if len(pending) == 0 {
			// Only refused deliveries are left: back off, then send them.
			if err := s.sleep(ctx, c.backoff, c.retries.until(ctx)); err != nil {
				for _, d := range c.waiting {
					if stored, ok := c.known[d.key.name]; ok {
						c.answerFrom(d, stored)
						continue
					}
					c.answer(d, Result{}, d.tx.retries.gaveUp(d.key.name, d.tx.sends, d.tx.refusal))
				}
				break
			}
			pending, c.waiting, c.backoff = c.waiting, nil, 0
		}
		pending = c.round(pending)
	}
}

// round sends the pending deliveries in as few transactions as fit and
// returns those to send again at once; those to send after a backoff go
// to c.waiting.
func (c *commitRun) round(pending []*delivery) []*delivery {
	slices.SortFunc(pending, func(x, y *delivery) int { return x.tx.order - y.tx.order })
	if len(pending) == 1 && len(c.waiting) == 0 && len(c.known) == 0 { // nothing to pack it with, nor answer it from
		return c.send(pending)
	}
	var (
		txs     []*tx
		taken   = map[string]bool{}
		waiting = map[string]bool{}
		next    []*delivery
	)
	for _, d := range c.waiting {
		waiting[d.key.name] = true
	}
	for _, d := range pending {
		switch stored, ok := c.known[d.key.name]; {
		case ok:
			c.answerFrom(d, stored)
		case waiting[d.key.name]: // an earlier delivery of its key waits: so does it
			c.waiting = append(c.waiting, d)
		case taken[d.key.name]: // DynamoDB refuses two actions on one claim
			next = append(next, d)
		default:
			taken[d.key.name] = true
			place(&txs, d)
		}
	}
	for _, t := range txs {
		next = append(next, c.send(t.ds)...)
	}
	return next
}

// send commits ds in one transaction. It answers the deliveries whose
// outcome it learns, puts those refused for contention or throttling in
// c.waiting, and returns the others, to be sent again at once.
func (c *commitRun) send(ds []*delivery) (again []*delivery) {
	items, at, ok := actions(ds)
	if !ok { // a sum past DynamoDB's precision: each delivery goes alone
		return c.alone(ds)
	}
	if !c.held {
		unlock, ok := c.lock(ds)
		if !ok {
			return nil
		}
		defer unlock()
	}
	// ClientRequestToken stays nil: the SDK fills it in and reuses it
	// across its own retries, which makes an ambiguous commit safe to
	// resend; a send after a cancellation is a new transaction, with a new
	// token.
	sent := sendLog{attempts: 1}
	cctx, span := c.span(ds, items)
	_, err := c.s.client.TransactWriteItems(cctx, &dynamodb.TransactWriteItemsInput{TransactItems: items}, sent.option)
	endCall(span, err)
	for _, d := range ds {
		d.tx.sends += sent.count()
	}
	if err == nil {
		for _, d := range ds {
			c.answer(d, Result{Outcome: Processed, Record: d.claim}, nil)
		}
		return nil
	}
	var tce *types.TransactionCanceledException
	readable := errors.As(err, &tce) && len(tce.CancellationReasons) == len(items)
	if len(ds) > 1 && !readable && (tce != nil || isValidationException(err) || isNotFound(err)) {
		// The server refused what the packing let through, or its reasons
		// cannot be told apart (nor which delivery's table is missing).
		return c.alone(ds)
	}
	if !readable {
		for _, d := range ds {
			if c.refused(d, err, &sent) {
				again = append(again, d)
			}
		}
		return again
	}
	blamed := 0
	var innocents []*delivery
	for k, d := range ds {
		// d's own view of the cancellation: the reason of each of its
		// items, a shared increment's for each delivery that shares it
		// (a delivery alone has the cancellation's own).
		own := tce
		if at != nil {
			reasons := make([]types.CancellationReason, len(d.tx.items))
			for j := range reasons {
				reasons[j] = tce.CancellationReasons[actionOf(at, k, j)]
			}
			own = &types.TransactionCanceledException{Message: tce.Message, CancellationReasons: reasons}
		}
		if innocent(own.CancellationReasons) {
			innocents = append(innocents, d)
			continue
		}
		blamed++
		if c.refused(d, own, &sent) {
			again = append(again, d)
		}
	}
	if blamed == 0 { // a cancellation that blames no action: given up
		for _, d := range innocents {
			c.answer(d, Result{}, &StoreError{Key: d.key.name, Err: err})
		}
		return again
	}
	return append(again, innocents...)
}

// lock takes the items ds's effects write (itemlock.go), or answers each
// of ds when the time for contention runs out first (retries.until), so
// that a delivery kept waiting by another here that holds its items
// through a backoff still answers before its deadline.
func (c *commitRun) lock(ds []*delivery) (unlock func(), ok bool) {
	start := time.Now()
	unlock, err := c.s.items.lock(c.ctx, written(ds), c.retries.until(c.ctx))
	if err != nil {
		for _, d := range ds {
			c.answer(d, Result{}, &ContendedError{Key: d.key.name, Attempts: d.tx.sends, Waited: time.Since(start),
				Err: fmt.Errorf("waiting for this process's other transactions on the effect's items: %w", err)})
		}
		return nil, false
	}
	return unlock, true
}

// alone sends each of ds in a transaction of its own, from now on.
func (c *commitRun) alone(ds []*delivery) []*delivery {
	for _, d := range ds {
		d.tx.alone = true
	}
	return ds
}

// span starts the transaction's span: a child of the delivery's span when
// it is one delivery's own, else a span of its own linked to each
// delivery's, the batch's call.
func (c *commitRun) span(ds []*delivery, items []types.TransactWriteItem) (context.Context, trace.Span) {
	if !c.batch {
		return c.s.call(ds[0].ctx, "TransactWriteItems", items)
	}
	var links []trace.Link
	for _, d := range ds {
		if d.trace != nil {
			links = append(links, trace.Link{SpanContext: d.trace.span.SpanContext()})
			d.trace.sends++
		}
	}
	if len(links) == 0 {
		return c.ctx, nil
	}
	return c.s.tracer.Start(c.ctx, "DynamoDB.TransactWriteItems", trace.WithSpanKind(trace.SpanKindClient), trace.WithLinks(links...),
		trace.WithAttributes(attribute.String("rpc.system", "aws-api"), attribute.String("rpc.service", "DynamoDB"), attribute.String("rpc.method", "TransactWriteItems"),
			attribute.String("db.system.name", "aws.dynamodb"), attribute.StringSlice("aws.dynamodb.table_names", tablesOf(items)), attribute.Int("idem.batch.message_count", len(ds))))
}

// answerFrom answers d, whose key an earlier delivery of the commit
// claimed or found claimed as stored, as the claim's condition would.
func (c *commitRun) answerFrom(d *delivery, stored Record) {
	stored.Response = slices.Clone(stored.Response) // the earlier delivery's Result has the same bytes
	res, err := answerFrom(d.key, stored)
	c.answer(d, res, err)
}

// answer gives d its commit's outcome.
func (c *commitRun) answer(d *delivery, res Result, err error) {
	if err == nil && d.tx.rej != nil && res.Outcome == Processed {
		res.Outcome, res.Rejection = Rejected, d.tx.rej
	}
	d.res, d.err = res, err
	if rec, ok := claimOf(res, err); ok && c.merge { // one delivery has no later ones
		if c.known == nil {
			c.known = make(map[string]Record)
		}
		c.known[d.key.name] = rec
	}
}
