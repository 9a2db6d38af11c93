package idem

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// UpdateItemAPI is the call a lease is taken and released with, besides
// TransactWriteItems. *dynamodb.Client implements it.
type UpdateItemAPI interface {
	UpdateItem(ctx context.Context, params *dynamodb.UpdateItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error)
}

// LeaseOptions configure ProcessLeased. Every default is written once, on
// its field, and applied by ProcessLeased.
type LeaseOptions struct {
	// Duration is the longest a lease lasts. It ends sooner, Reserve
	// before the context's deadline (a Lambda invoke's remaining time), when
	// that comes first, so that the lease of an environment that crashed or
	// timed out has ended by the time its message is redelivered. The
	// handler's context is done when the lease ends. Defaults to 1 minute.
	Duration time.Duration

	// Reserve is the time kept between the lease's end and the context's
	// deadline, for the commit or the release after the handler: a handler
	// cut off at the lease's end still reports its failure before the
	// invoke times out. Negative keeps none. Defaults to 1 second.
	Reserve time.Duration

	// KeyLifetime is how long the services the handler calls honour the
	// key it forwards (Stripe's API: 24 hours). No new lease is taken on a
	// message first claimed longer ago, since a call made again might no
	// longer be deduplicated: the delivery fails with a *StaleLeaseError
	// for someone to look at. It must exceed Duration. Defaults to 24
	// hours.
	KeyLifetime time.Duration
}

func (o *LeaseOptions) setDefaults() {
	if o.Duration == 0 {
		o.Duration = time.Minute
	}
	if o.KeyLifetime == 0 {
		o.KeyLifetime = 24 * time.Hour
	}
	if o.Reserve == 0 {
		o.Reserve = time.Second
	}
}

// Lease is the claim a handler run by ProcessLeased holds.
type Lease struct {
	// Key is the claim key: forward it as the Idempotency-Key of the
	// service the handler calls. It is the same for every delivery of the
	// message.
	Key string
	// Token is the fencing token: larger for each new lease on the key.
	// The commit applies only while the claim still holds it.
	Token int64
	// Until is when the lease ends, and the handler's context with it.
	Until time.Time
	// ClaimedAt is when the message was first claimed, by this lease or an
	// earlier one.
	ClaimedAt time.Time

	leaseID string // names the lease in the claim, for its release and its commit
}

// StepKey is the key to forward for one of several calls the handler
// makes, named by step ("payout", "receipt"): stable across redeliveries,
// and distinct per step.
func (l Lease) StepKey(step string) string { return l.Key + "/" + step }

type leaseKey struct{}

// LeaseFromContext returns the lease a ProcessLeased handler's context
// carries.
func LeaseFromContext(ctx context.Context) (Lease, bool) {
	l, ok := ctx.Value(leaseKey{}).(Lease)
	return l, ok
}

// checkLease reports whether the Store can run handlers under a lease
// with these options: its client must have UpdateItem, and the options
// must make sense. Adapters check when they are built.
func (s *Store) checkLease(o LeaseOptions) error {
	o.setDefaults()
	if s.updater == nil {
		return fmt.Errorf("idem: lease: the Store's DynamoDB client (%T) has no UpdateItem method, which a lease is taken with", s.client)
	}
	switch {
	case o.Duration < 0 || o.KeyLifetime < 0:
		return errors.New("idem: lease: LeaseOptions.Duration and KeyLifetime must not be negative")
	case o.Duration < time.Second:
		return fmt.Errorf("idem: lease: LeaseOptions.Duration is %v; a lease shorter than a second leaves no time to call out", o.Duration)
	case o.KeyLifetime <= o.Duration:
		return fmt.Errorf("idem: lease: LeaseOptions.KeyLifetime (%v) must exceed Duration (%v): a lease and its retries must stay inside the lifetime of the key it forwards", o.KeyLifetime, o.Duration)
	case s.opts.retention() <= o.KeyLifetime+o.Duration:
		return fmt.Errorf("idem: lease: Options.RetentionDays (%d) must exceed LeaseOptions.KeyLifetime + Duration (%v): a pending claim must outlive every lease that could call with its key", s.opts.RetentionDays, o.KeyLifetime+o.Duration)
	}
	return nil
}

// ProcessLeased is Process for a handler that calls other services before
// its DynamoDB writes can be described, such as a payment API whose answer
// the effect stores. The claim is written first, alone, as pending: a
// lease that ends before ctx's deadline, and a fencing token. h then runs
// with the lease in its context (LeaseFromContext): it calls out with the
// lease's Key as the Idempotency-Key (or StepKey, one per call), which
// the services it calls deduplicate. Last, one transaction commits h's
// writes, its response and the claim, on the condition that the claim
// still holds this lease's token.
//
// While a lease is live, another delivery of the message makes no call:
// it returns a *LeaseHeldError, to be retried after the lease. A handler
// error or panic releases the lease, so the redelivery runs at once; a
// crash or a timeout leaves it to end. The next delivery then takes a new
// lease and token and runs h again, with the same key: the service called
// answers it as the first call, and the late delivery's commit, should it
// come, applies nothing and returns a *FencedError.
//
// It costs a call more than Process for a first delivery (the lease's
// UpdateItem), two more when h fails (the release); a duplicate costs one
// call, as in Process, or none from the cache. The Store's client must
// have UpdateItem.
func (s *Store) ProcessLeased(ctx context.Context, msg Message, h Handler, optFns ...func(*LeaseOptions)) (Result, error) {
	var o LeaseOptions
	for _, fn := range optFns {
		fn(&o)
	}
	d := s.begin(ctx, msg, h, -1)
	defer d.trace.endAfterPanic()
	if err := s.checkLease(o); d.err == nil && err != nil {
		d.err = &InvalidError{Key: d.key.name, Reason: err.Error()}
	}
	o.setDefaults()
	// A delivery of the key in flight in this process holds its lease, or
	// is taking it: d waits for it rather than fail with the lease held.
	s.deliver(ctx, []*delivery{d}, mode{lease: &o})
	return d.res, d.err
}

// runLeased takes a lease on d's key, runs d's handler under it and
// commits the effect on the lease's token.
func (s *Store) runLeased(d *delivery, o LeaseOptions) {
	key := d.key.name
	if d.err = s.checkTable(d.ctx, key); d.err != nil {
		return
	}
	lease, res, err := s.acquire(d, o)
	if err != nil || lease.Token == 0 { // a failure, or the message processed before
		d.res, d.err = res, err
		return
	}
	// By the Store's clock, as the lease's end is.
	hctx, cancel := context.WithTimeout(context.WithValue(withMessage(d.ctx, d.msg), leaseKey{}, lease), lease.Until.Sub(s.opts.Now()))
	eff, err := runHandler(hctx, d.msg, key, d.h)
	cancel()
	now := s.opts.Now()
	d.claim = s.newClaim(d.key, lease.ClaimedAt, traceContext(d.ctx))
	d.claim.ExpiresAt = now.Add(s.opts.retention())
	if err == nil {
		err = s.checkEffect(d, &eff, now)
	}
	if err != nil {
		s.release(d.ctx, key, lease.leaseID)
		d.err = err
		return
	}
	d.claim.Outcome, d.claim.Response, d.claim.Token, d.claim.lease = Processed, eff.Response, lease.Token, lease.leaseID
	d.tx.writes, d.rejected, d.tx.kind = eff.Writes, eff.Rejected, underLease
	s.commit(d.ctx, []*delivery{d}, false)
	if d.err != nil && !errors.Is(d.err, ErrFenced) {
		// Safe even if the commit went through with its answer lost: the
		// release applies only to a claim still pending under this lease.
		s.release(d.ctx, key, lease.leaseID)
	}
}

// acquire takes a lease on d's key: a new claim, or the takeover of a
// pending one whose lease has ended. A Token of 0 means the message was
// processed before, and res is its Duplicate.
func (s *Store) acquire(d *delivery, o LeaseOptions) (Lease, Result, error) {
	ctx, k := d.ctx, d.key
	client := s.updater    // checkLease saw to it
	leaseID := rand.Text() // this delivery's own: what its release and commit name
	for attempt := 1; ; attempt++ {
		now := s.opts.Now()
		until := now.Add(o.Duration)
		if deadline, ok := ctx.Deadline(); ok && deadline.Add(-max(o.Reserve, 0)).Before(until) {
			until = deadline.Add(-max(o.Reserve, 0))
		}
		if until.Sub(now) < minLease {
			return Lease{}, Result{}, &RetryableError{Key: k.name, Err: fmt.Errorf("less than %v left for a lease before the deadline: %w", minLease, context.DeadlineExceeded)}
		}
		stored, ours, err := s.readForLease(ctx, client, k, now, until, leaseID)
		if err != nil {
			return Lease{}, Result{}, err
		}
		if ours {
			return Lease{Key: k.name, Token: stored.Token, Until: until, ClaimedAt: stored.ClaimedAt, leaseID: leaseID}, Result{}, nil
		}
		res, err := answerFrom(k, stored)
		var lh *LeaseHeldError
		switch {
		case err == nil: // processed before
			return Lease{}, res, nil
		case !errors.As(err, &lh):
			return Lease{}, Result{}, err
		case !lh.ended(now):
			return Lease{}, Result{}, err
		case until.Sub(stored.ClaimedAt) > o.KeyLifetime: // the call could come after the key is forgotten
			return Lease{}, Result{}, &StaleLeaseError{Key: k.name, ClaimedAt: stored.ClaimedAt, KeyLifetime: o.KeyLifetime}
		}
		lease, taken, err := s.takeOverLease(ctx, client, stored, until, leaseID)
		if err != nil || taken {
			return lease, Result{}, err
		}
		if attempt >= s.opts.MaxAttempts { // each attempt lost a race to another taker
			return Lease{}, Result{}, &RetryableError{Key: k.name, Attempts: attempt, Err: errors.New("the claim changed under each takeover")}
		}
	}
}

// held is the *LeaseHeldError of a delivery that met stored, a pending
// claim: retry after its lease, and the skew.
func held(key string, stored Record) *LeaseHeldError {
	return &LeaseHeldError{Key: key, Until: stored.LeaseUntil.Add(takeoverSkew), stored: stored}
}

// minLease is the shortest lease taken: with less time left before the
// deadline, the handler could not call out, and the delivery is retried.
const minLease = time.Second

// takeoverSkew is how long after a lease's end another delivery may take
// it over: the end is by the holder's clock, the takeover by the taker's,
// and environments' clocks agree to well within it.
const takeoverSkew = time.Second

// readForLease claims k's key as pending under leaseID (ours), or, when
// a record holds it, returns that record.
func (s *Store) readForLease(ctx context.Context, client UpdateItemAPI, k claimKey, now, until time.Time, leaseID string) (Record, bool, error) {
	var sent sendLog
	in := s.pendingClaim(k, now, until, leaseID)
	var out *dynamodb.UpdateItemOutput
	err := s.retryContention(ctx, func() (err error) {
		out, err = s.updateItem(ctx, client, in, &sent)
		return err
	})
	if err == nil {
		rec := s.newClaim(k, now, "")
		rec.Outcome, rec.LeaseUntil, rec.lease = Pending, until, leaseID
		rec.Token = number(out.Attributes[s.opts.Attributes.Token])
		return rec, true, nil
	}
	var ccf *types.ConditionalCheckFailedException
	if errors.As(err, &ccf) {
		if isOutboxItem(ccf.Item) {
			return Record{}, false, errOutboxKey(k.name)
		}
		// Our own claim, when an SDK resend follows a first send that
		// applied with its answer lost.
		stored := s.decodeRecord(ccf.Item)
		return stored, stored.Outcome == Pending && stored.lease == leaseID, nil
	}
	if isNotFound(err) { // the lease's UpdateItem names the claims table alone
		return Record{}, false, &TableNotFoundError{Key: k.name, Tables: []string{s.table}, Claims: true, Region: s.region, Err: err}
	}
	contended := isContention(err) // refused: nothing was taken
	err = callError(k.name, "the lease", err, &sent)
	if errors.Is(err, ErrRetryable) && !contended {
		// The lease may have been taken with its answer lost: release it,
		// or the redelivery would wait it out.
		s.release(ctx, k.name, leaseID)
	}
	return Record{}, false, err
}

// takeOverLease takes the lease of stored, a pending claim whose lease ended,
// under leaseID; taken is false when another delivery changed the claim
// first.
func (s *Store) takeOverLease(ctx context.Context, client UpdateItemAPI, stored Record, until time.Time, leaseID string) (Lease, bool, error) {
	var sent sendLog
	in := s.takeOverInput(stored, until, leaseID)
	var out *dynamodb.UpdateItemOutput
	err := s.retryContention(ctx, func() (err error) {
		out, err = s.updateItem(ctx, client, in, &sent)
		return err
	})
	if err == nil {
		return Lease{Key: stored.Key, Token: number(out.Attributes[s.opts.Attributes.Token]), Until: until, ClaimedAt: stored.ClaimedAt, leaseID: leaseID}, true, nil
	}
	var ccf *types.ConditionalCheckFailedException
	if errors.As(err, &ccf) {
		if now := s.decodeRecord(ccf.Item); now.Outcome == Pending && now.lease == leaseID { // a resend, as in readForLease
			return Lease{Key: stored.Key, Token: now.Token, Until: until, ClaimedAt: stored.ClaimedAt, leaseID: leaseID}, true, nil
		}
		return Lease{}, false, nil
	}
	contended := isContention(err)
	err = callError(stored.Key, "the lease's takeover", err, &sent)
	if errors.Is(err, ErrRetryable) && !contended { // as in readForLease
		s.release(ctx, stored.Key, leaseID)
	}
	return Lease{}, false, err
}

// release ends the lease leaseID holds on key, if it still does, so the
// message's next delivery runs at once. It is best effort, and ends by
// ctx's deadline: a release that fails leaves the lease to end by itself.
func (s *Store) release(ctx context.Context, key, leaseID string) {
	timeout := releaseTimeout
	if deadline, ok := ctx.Deadline(); ok {
		timeout = min(timeout, time.Until(deadline))
	}
	if timeout <= 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), timeout)
	defer cancel()
	// A conflict is the claim being written by another delivery's
	// transaction at that moment: worth the backoff, within the timeout.
	in := s.releaseInput(key, leaseID)
	var sent sendLog
	_ = s.retryContention(ctx, func() error {
		_, err := s.updateItem(ctx, s.updater, in, &sent)
		return err
	})
}

// updateItem is one UpdateItem call of a lease, with its span, counted in
// sent.
func (s *Store) updateItem(ctx context.Context, client UpdateItemAPI, in *dynamodb.UpdateItemInput, sent *sendLog) (*dynamodb.UpdateItemOutput, error) {
	sent.attempts++
	cctx, span := s.call(ctx, "UpdateItem", nil)
	out, err := client.UpdateItem(cctx, in, sent.option)
	endCall(span, err)
	return out, err
}

// releaseTimeout bounds a release, which may run after the handler's
// context has ended.
const releaseTimeout = 2 * time.Second
