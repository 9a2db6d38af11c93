package idem

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"
	"github.com/aws/smithy-go/middleware"
)

// A failed call: what its error means (callError), whether it may yet
// have applied (its request went out, and the error is not DynamoDB's
// answer), and the backoff before another attempt.

// isTransient: errors the SDK gave up retrying, server faults, network
// errors and the deadline. The transaction may have committed (its answer
// lost); retrying the delivery is safe, as a committed one is a Duplicate.
func isTransient(err error) bool {
	var (
		maxAttempts *retry.MaxAttemptsError
		ae          smithy.APIError
		netErr      net.Error
	)
	switch {
	case errors.As(err, &maxAttempts), errors.As(err, &netErr),
		errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		return true
	case errors.As(err, &ae):
		switch ae.ErrorCode() {
		case "ThrottlingException", "ProvisionedThroughputExceededException", "RequestLimitExceeded",
			"TransactionInProgressException", "InternalServerError", "ServiceUnavailable":
			return true
		case contentionTransaction, contentionReplicated: // FACTS: both mean "try again"
			return true
		}
		return ae.ErrorFault() == smithy.FaultServer
	}
	return false
}

// DynamoDB's answers to a single-item call (UpdateItem, GetItem, PutItem,
// DeleteItem) on an item that another write holds at that moment: a
// transaction writing it, or a write in another Region of a global table.
// The SDK's retryer does not retry either; neither means that nothing
// happened to the item, only that this call did nothing yet.
const (
	contentionTransaction = "TransactionConflictException"
	contentionReplicated  = "ReplicatedWriteConflictException"
)

// isContention says whether err is DynamoDB's answer that another write
// held the item: the call did nothing and is worth another attempt after
// a backoff.
func isContention(err error) bool {
	var ae smithy.APIError
	if !errors.As(err, &ae) {
		return false
	}
	code := ae.ErrorCode()
	return code == contentionTransaction || code == contentionReplicated
}

// claimContended says whether err says that another write held the
// claim's own item through the delivery's attempts: a *ContendedError on
// the claim, or a *RetryableError of a lease's call answered with
// contention. Another delivery of the message was committing it: the
// outcome is InFlight, not Failed.
func claimContended(err error) bool {
	var ce *ContendedError
	if errors.As(err, &ce) {
		return ce.Claim
	}
	var re *RetryableError
	return errors.As(err, &re) && isContention(re.Err)
}

// contendedOnly says whether err refused a call for contention alone: a
// cancellation whose reasons name TransactionConflict and nothing else
// but None, or a single-item call's contention exception (always on the
// claim's item: the calls a Store makes alone are a lease's); claim, when
// the transaction's first action, the claim, was among those held.
func contendedOnly(err error) (contended, claim bool) {
	var tce *types.TransactionCanceledException
	if !errors.As(err, &tce) {
		c := isContention(err)
		return c, c
	}
	for i, r := range tce.CancellationReasons {
		switch aws.ToString(r.Code) {
		case "", "None":
		case "TransactionConflict":
			contended, claim = true, claim || i == 0
		default:
			return false, false
		}
	}
	return contended, claim
}

// A call refused for contention did nothing, and another transaction will
// soon let go of the item: it is sent again, after a jittered backoff,
// for as long as the delivery has time, the context's deadline less
// contentionReserve (for the answer to reach the sender), or
// contentionWithoutDeadline after the first attempt. A call refused for
// throttling is sent again at most Options.MaxAttempts times.
const (
	contentionReserve         = 250 * time.Millisecond
	contentionWithoutDeadline = 30 * time.Second
)

// retries is the retry state of one call, or of one message of a batch.
type retries struct {
	start     time.Time // of the first attempt
	refusals  int
	throttled int
	contended bool // the last refusal was contention alone
	claim     bool // on the claim's own item
}

func newRetries() retries { return retries{start: time.Now()} }

// refused notes err, a refusal worth another attempt (retryable), and
// says whether one is allowed: contention within the delivery's time,
// throttling within Options.MaxAttempts.
func (r *retries) refused(ctx context.Context, s *Store, err error) bool {
	r.refusals++
	if r.contended, r.claim = contendedOnly(err); r.contended {
		return time.Now().Before(r.until(ctx))
	}
	r.throttled++
	return r.throttled < s.opts.MaxAttempts
}

// until is when the delivery stops retrying contention.
func (r *retries) until(ctx context.Context) time.Time {
	if d, ok := ctx.Deadline(); ok {
		return d.Add(-contentionReserve)
	}
	return r.start.Add(contentionWithoutDeadline)
}

// wait sleeps the backoff before the next attempt, or says why not: the
// context ended, or the wait would outlast the delivery's time.
func (r *retries) wait(ctx context.Context, s *Store) error {
	return s.sleep(ctx, r.refusals, r.until(ctx))
}

// gaveUp is the error of a call that will not be sent again after err,
// sent sends times: a *ContendedError after contention, else a
// *RetryableError.
func (r *retries) gaveUp(key string, sends int, err error) error {
	if r.contended {
		return &ContendedError{Key: key, Attempts: sends, Waited: time.Since(r.start), Claim: r.claim, Err: err}
	}
	return &RetryableError{Key: key, Attempts: sends, Err: err}
}

// retryContention runs call, a single-item call of a lease, until it
// returns anything but contention or the delivery's time runs out, with
// the Store's backoff between attempts; it then returns the last error,
// which callError reads as retryable.
func (s *Store) retryContention(ctx context.Context, call func() error) error {
	r := newRetries()
	for {
		err := call()
		if !isContention(err) || !r.refused(ctx, s, err) || r.wait(ctx, s) != nil {
			return err
		}
	}
}

// sleep waits a full-jitter backoff after attempt refusals, or returns
// early with the context's error or when the wait would end after until
// (or the context's deadline).
func (s *Store) sleep(ctx context.Context, attempt int, until time.Time) error {
	ceiling := s.opts.BackoffMax
	if shift := min(attempt-1, 30); s.opts.BackoffBase <= s.opts.BackoffMax>>shift {
		ceiling = s.opts.BackoffBase << shift // cannot overflow: at most BackoffMax
	}
	d := time.Duration(rand.Int64N(int64(ceiling) + 1))
	if deadline, ok := ctx.Deadline(); ok && (until.IsZero() || deadline.Before(until)) {
		until = deadline
	}
	if !until.IsZero() && time.Until(until) < d {
		return context.DeadlineExceeded
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// sendLog counts, through a middleware on each call, the requests that
// went out, the SDK's retries included. An error that is not DynamoDB's
// answer (a reset, a timeout, a response cut short or unreadable) may
// follow a commit only if a request went out.
type sendLog struct {
	attempts int  // calls made
	hooked   bool // the middleware was installed: the client is the SDK's
	sends    int  // requests handed to the HTTP client
}

// option installs the middleware; a client that ignores it (a fake)
// leaves hooked false, and every error of its is taken as maybe sent.
func (l *sendLog) option(o *dynamodb.Options) {
	o.APIOptions = append(o.APIOptions, l.install)
}

func (l *sendLog) install(stack *middleware.Stack) error {
	l.hooked = true
	// Last in the deserialize step: right before the HTTP request is sent.
	return stack.Deserialize.Add(middleware.DeserializeMiddlewareFunc("idem.sendLog",
		func(ctx context.Context, in middleware.DeserializeInput, next middleware.DeserializeHandler) (middleware.DeserializeOutput, middleware.Metadata, error) {
			l.sends++
			return next.HandleDeserialize(ctx, in)
		}), middleware.After)
}

// mayHaveSent: a request went out, or the client cannot tell.
func (l *sendLog) mayHaveSent() bool { return !l.hooked || l.sends > 0 }

// count is how many times the transaction was sent: the requests counted,
// or the calls made when the client cannot tell.
func (l *sendLog) count() int {
	if l.hooked {
		return l.sends
	}
	return l.attempts
}

// callError classifies a call's error that is not a cancellation: what
// names the call in the error (none for the commit). sent tells whether a
// request went out: an error that is not DynamoDB's answer may follow a
// write that applied.
func callError(key, what string, err error, sent *sendLog) error {
	var ae smithy.APIError
	switch {
	case isTransient(err) || !errors.As(err, &ae) && sent.mayHaveSent():
		if what != "" {
			err = fmt.Errorf("%s: %w", what, err)
		}
		return &RetryableError{Key: key, Attempts: sent.count(), Err: err}
	case ae != nil && ae.ErrorCode() == "ValidationException":
		reason := ae.ErrorMessage()
		if what != "" {
			reason = what + ": " + reason
		}
		return &InvalidError{Key: key, Reason: reason, Server: true}
	}
	if what != "" {
		err = fmt.Errorf("%s: %w", what, err)
	}
	return &StoreError{Key: key, Err: err}
}
