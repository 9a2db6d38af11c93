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

// claimContended says whether err is a *RetryableError whose last
// attempt met another write on the claim's own item: a lease's call
// answered with contention, or a transaction cancelled with
// TransactionConflict on its first action, the claim. Another delivery of
// the message was committing it: the outcome is InFlight, not Failed.
func claimContended(err error) bool {
	var re *RetryableError
	if !errors.As(err, &re) {
		return false
	}
	var tce *types.TransactionCanceledException
	if errors.As(re.Err, &tce) {
		r := tce.CancellationReasons
		return len(r) > 0 && aws.ToString(r[0].Code) == "TransactionConflict"
	}
	return isContention(re.Err)
}

// retryContention runs call until it returns anything but contention, at
// most Options.MaxAttempts times, with the Store's backoff between
// attempts; past them, or when the backoff would outlast ctx, it returns
// the last contention error, which callError reads as retryable.
func (s *Store) retryContention(ctx context.Context, call func() error) error {
	for attempt := 1; ; attempt++ {
		err := call()
		if !isContention(err) || attempt >= s.opts.MaxAttempts {
			return err
		}
		if s.sleep(ctx, attempt) != nil {
			return err
		}
	}
}

// sleep waits a full-jitter backoff, or returns early with the context's
// error or when the wait would outlast its deadline.
func (s *Store) sleep(ctx context.Context, attempt int) error {
	ceiling := s.opts.BackoffMax
	if shift := min(attempt-1, 30); s.opts.BackoffBase <= s.opts.BackoffMax>>shift {
		ceiling = s.opts.BackoffBase << shift // cannot overflow: at most BackoffMax
	}
	d := time.Duration(rand.Int64N(int64(ceiling) + 1))
	if deadline, ok := ctx.Deadline(); ok && time.Until(deadline) < d {
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
