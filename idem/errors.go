package idem

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemkit/kit/idem/internal/seam"
)

// Sentinels matched with errors.Is; each typed error below matches one.
var (
	// ErrInvalid: the message or its effect cannot be committed as given.
	ErrInvalid = errors.New("idem: invalid")
	// ErrKeyReuse: the id was claimed before for another payload.
	ErrKeyReuse = errors.New("idem: key reused with a different payload")
	// ErrRejected: a condition of the effect failed.
	ErrRejected = errors.New("idem: effect rejected")
	// ErrRetryable: a transient failure (conflict, throttling, a server or
	// network error, the deadline). The transaction may have committed, as
	// an answer can be lost after the commit; retry the delivery later,
	// which is safe either way: a committed one comes back a Duplicate.
	ErrRetryable = errors.New("idem: transient failure")
	// ErrDeadline: an adapter did not start the delivery, the Lambda
	// deadline being within its margin, or the context done. Nothing was
	// done; it comes back with the batch's retry.
	ErrDeadline = errors.New("idem: not started: the deadline is near")
	// ErrContended: the delivery's transaction met other transactions on
	// its items until it ran out of time (a *ContendedError). Nothing was
	// committed; it matches ErrRetryable too.
	ErrContended = errors.New("idem: contended until the deadline")
	// ErrTableNotFound: a table the delivery writes does not exist in the
	// client's Region, a configuration error rather than an outage. It
	// matches a *TableNotFoundError, which matches ErrInvalid too.
	ErrTableNotFound = errors.New("idem: table not found")
)

// InvalidError reports a message or effect that was not sent because
// DynamoDB would refuse it (or, when Server is true, that DynamoDB refused).
type InvalidError struct {
	Key    string
	Reason string
	Server bool
}

func (e *InvalidError) Error() string {
	if e.Key == "" {
		return "idem: invalid: " + e.Reason
	}
	return fmt.Sprintf("idem: %q: invalid: %s", e.Key, e.Reason)
}

func (e *InvalidError) Is(target error) bool { return target == ErrInvalid }

// KeyReuseError reports an id claimed before for a different payload.
type KeyReuseError struct {
	Key         string
	Fingerprint string // this delivery's payload
	Stored      Record // the claim that holds the id
}

func (e *KeyReuseError) Error() string {
	return fmt.Sprintf("idem: %q: key reused with a different payload (fingerprint %s, stored %s)", e.Key, e.Fingerprint, e.Stored.Fingerprint)
}

func (e *KeyReuseError) Is(target error) bool { return target == ErrKeyReuse }

// RejectedError reports a failed condition on one of the effect's writes.
type RejectedError struct {
	Key string
	// Index is the write's position in Effect.Writes.
	Index int
	// Table is the table the write names.
	Table string
	// Item is the item as it was, when the write asked for ALL_OLD.
	Item map[string]types.AttributeValue
}

func (e *RejectedError) Error() string {
	return fmt.Sprintf("idem: %q: effect write %d on %s rejected by its condition", e.Key, e.Index, e.Table)
}

func (e *RejectedError) Is(target error) bool { return target == ErrRejected }

// Decode reads the rejected item, as it was when the condition failed,
// into v with attributevalue.UnmarshalMap. The item is there only when the
// write asked for it (ReturnValuesOnConditionCheckFailure ALL_OLD); without
// it Decode leaves v as it is and returns nil.
func (e *RejectedError) Decode(v any) error {
	if len(e.Item) == 0 {
		return nil
	}
	if err := attributevalue.UnmarshalMap(e.Item, v); err != nil {
		return fmt.Errorf("idem: %q: decode the rejected item of %s: %w", e.Key, e.Table, err)
	}
	return nil
}

// RetryableError reports a transient failure: the transaction may have
// committed with its answer lost (a timeout, a reset connection, a response
// cut short or unreadable after the request went out), or was not sent
// before the deadline. Retrying the delivery is safe either way.
type RetryableError struct {
	Key string
	// Attempts is how many times the transaction was sent, the SDK's own
	// retries included.
	Attempts int
	Err      error
}

func (e *RetryableError) Error() string {
	return fmt.Sprintf("idem: %q: transient failure after %d send(s): %v", e.Key, e.Attempts, e.Err)
}

func (e *RetryableError) Is(target error) bool { return target == ErrRetryable }
func (e *RetryableError) Unwrap() error        { return e.Err }

// ContendedError reports a delivery whose transaction DynamoDB cancelled
// for contention (another transaction writing one of its items at that
// moment) on every attempt until its time ran out: the context's deadline
// less a reserve for the answer, or, with no deadline, 30 seconds.
// Nothing was committed; retrying is safe, and the item's contention is
// the thing to look at (the guide's hot items).
type ContendedError struct {
	Key string
	// Attempts is how many times the transaction was sent.
	Attempts int
	// Waited is how long the delivery kept trying.
	Waited time.Duration
	// Claim says the contended item was the message's own claim: another
	// delivery of the message was committing it (counted InFlight, not
	// Contended).
	Claim bool
	// Err is the last attempt's cancellation.
	Err error
}

func (e *ContendedError) Error() string {
	what := "its effect's items"
	if e.Claim {
		what = "its claim"
	}
	return fmt.Sprintf("idem: %q: contended: %s written by other transactions through %d send(s) over %v, until the deadline: %v",
		e.Key, what, e.Attempts, e.Waited.Round(time.Millisecond), e.Err)
}

func (e *ContendedError) Is(target error) bool {
	return target == ErrContended || target == ErrRetryable
}
func (e *ContendedError) Unwrap() error { return e.Err }

// HandlerError wraps the error a Handler returned; nothing was committed.
type HandlerError struct {
	Key string
	Err error
}

func (e *HandlerError) Error() string { return fmt.Sprintf("idem: %q: handler: %v", e.Key, e.Err) }
func (e *HandlerError) Unwrap() error { return e.Err }

// PanicError reports a callback that panicked: a Handler, Effect.Rejected,
// Message.Replay, or an adapter's key function or verifier. Nothing was
// committed. The panic is returned rather than re-raised so that one bad
// message cannot take a whole batch, or the process, down with it.
type PanicError struct {
	Key string
	// Callback names what panicked, such as "the handler" or
	// "Effect.Rejected".
	Callback string
	Value    any
	Stack    []byte
}

func (e *PanicError) Error() string {
	cb := e.Callback
	if cb == "" {
		cb = "the handler"
	}
	if e.Key == "" {
		return fmt.Sprintf("idem: %s panicked: %v", cb, e.Value)
	}
	return fmt.Sprintf("idem: %q: %s panicked: %v", e.Key, cb, e.Value)
}

// Unwrap is the panic's value when it was an error.
func (e *PanicError) Unwrap() error {
	err, _ := e.Value.(error)
	return err
}

// recoverPanic runs fn and returns a panic in it as a *PanicError naming
// callback, with its stack, for the caller to name the delivery in (its
// Key): every callback the kit calls fails one delivery, never the
// process.
func recoverPanic(callback string, fn func()) *PanicError {
	if v, stack, panicked := seam.Recover(fn); panicked {
		return &PanicError{Callback: callback, Value: v, Stack: stack}
	}
	return nil
}

// recovered runs fn as recoverPanic does and returns its error, or the
// panic named for key.
func recovered(key, callback string, fn func() error) error {
	var err error
	if p := recoverPanic(callback, func() { err = fn() }); p != nil {
		p.Key = key
		return p
	}
	return err
}

// ReplayError reports a Duplicate whose stored record Message.Replay could
// not read, such as a response written by another adapter sharing the
// scope. Nothing was applied; the delivery is counted Failed, once.
type ReplayError struct {
	Key string
	Err error
}

func (e *ReplayError) Error() string {
	return fmt.Sprintf("idem: %q: duplicate, but its stored record cannot be replayed: %v", e.Key, e.Err)
}
func (e *ReplayError) Unwrap() error { return e.Err }

// TableNotFoundError reports a delivery that met a table missing from its
// Region (DynamoDB's ResourceNotFoundException): the claims table, found
// missing by the Store's DescribeTable before the claim (Claims), or a
// table the delivery's transaction writes. A configuration error, not an
// outage: nothing was applied or recorded, and the delivery fails, to come
// back (an SQS batch item failure, a webhook's 500) until the table exists
// or its name is fixed. It is counted TableNotFound, apart from Failed.
type TableNotFoundError struct {
	Key string
	// Tables are the tables that may be missing: the claims table alone
	// when Claims, else the transaction's tables DynamoDB did not tell
	// apart (its answer names none), the claims table left out once it
	// is known to exist.
	Tables []string
	// Claims says the missing table is the claims table idem.New was
	// given.
	Claims bool
	// Region is the client's Region, "" when the client does not say
	// (a client other than *dynamodb.Client).
	Region string
	Err    error
}

func (e *TableNotFoundError) Error() string {
	where := "in " + e.Region
	if e.Region == "" {
		where = "in the client's Region"
	}
	quoted := make([]string, len(e.Tables))
	for i, t := range e.Tables {
		quoted[i] = strconv.Quote(t)
	}
	var what string
	switch {
	case e.Claims:
		what = fmt.Sprintf("processed-ids table %s not found %s: create it, or give idem.New the name of the table that exists", strings.Join(quoted, ", "), where)
	case len(quoted) == 1:
		what = fmt.Sprintf("effect table %s not found %s: create it, or fix the table name in the effect's writes", quoted[0], where)
	default:
		what = fmt.Sprintf("one of the tables %s not found %s (DynamoDB does not say which): create it, or fix the name given", strings.Join(quoted, ", "), where)
	}
	if e.Key == "" {
		return "idem: " + what + "; nothing was applied"
	}
	return fmt.Sprintf("idem: %q: %s; nothing was applied", e.Key, what)
}

func (e *TableNotFoundError) Is(target error) bool {
	return target == ErrTableNotFound || target == ErrInvalid
}
func (e *TableNotFoundError) Unwrap() error { return e.Err }

// StoreError wraps a DynamoDB error that is neither transient nor the
// message's fault: an answer from DynamoDB that refused the call (denied
// access; a missing table is a *TableNotFoundError), or a failure before
// any request went out (no credentials). Nothing was committed.
type StoreError struct {
	Key string
	Err error
}

func (e *StoreError) Error() string { return fmt.Sprintf("idem: %q: store: %v", e.Key, e.Err) }
func (e *StoreError) Unwrap() error { return e.Err }

// ErrLeaseHeld, ErrInFlight and ErrFenced match a *LeaseHeldError, an
// *InFlightError and a *FencedError; each matches ErrRetryable too, as
// retrying the delivery is right for them all.
var (
	// ErrLeaseHeld: another delivery of the message holds its lease.
	ErrLeaseHeld = errors.New("idem: lease held by another delivery")
	// ErrInFlight: another delivery of the message was running in this
	// process for longer than this one could wait.
	ErrInFlight = errors.New("idem: another delivery of the message is in flight")
	// ErrFenced: the delivery's lease was taken over before its commit.
	ErrFenced = errors.New("idem: lease taken over before the commit")
)

// LeaseHeldError reports a delivery (of Process, ProcessBatch or
// ProcessLeased) that met a live lease on its message: a ProcessLeased
// delivery is running its handler, or its environment crashed and the
// lease has yet to end. Nothing was done or called; retry after Until.
type LeaseHeldError struct {
	Key   string
	Until time.Time

	stored Record // the pending claim met
}

// ended says whether the lease met has ended, so the claim may be taken
// over, at now.
func (e *LeaseHeldError) ended(now time.Time) bool { return !e.Until.After(now) }

func (e *LeaseHeldError) Error() string {
	return fmt.Sprintf("idem: %q: another delivery holds the lease until %s; retry after it", e.Key, e.Until.UTC().Format(time.RFC3339Nano))
}

func (e *LeaseHeldError) Is(target error) bool {
	return target == ErrLeaseHeld || target == ErrRetryable
}

// InFlightError reports a delivery that gave up waiting for another
// delivery of its message running in the same process (a webhook adapter
// bounds that wait, to answer within its caller's limit): nothing was done
// by this one; retry after RetryAfter, when the other has likely settled
// and the retry is its Duplicate.
type InFlightError struct {
	Key        string
	Waited     time.Duration
	RetryAfter time.Duration
}

func (e *InFlightError) Error() string {
	return fmt.Sprintf("idem: %q: another delivery of the message is running in this process (waited %v); retry after %v", e.Key, e.Waited, e.RetryAfter)
}

func (e *InFlightError) Is(target error) bool {
	return target == ErrInFlight || target == ErrRetryable
}

// FencedError reports a delivery whose lease ended and was taken over by
// another before its commit, which applied nothing: the claim no longer
// holds Token. The calls it made with the lease's key are answered to the
// delivery that took over, which commits the effect once. Retrying is safe:
// the retry is a Duplicate, or meets the live lease.
type FencedError struct {
	Key   string
	Token int64
	// Stored is the claim as the commit found it (zero when it was gone).
	Stored Record
}

func (e *FencedError) Error() string {
	now := "the claim is gone"
	if e.Stored.Outcome != "" {
		now = fmt.Sprintf("the claim is %s under token %d", e.Stored.Outcome, e.Stored.Token)
	}
	return fmt.Sprintf("idem: %q: the lease of token %d was taken over before this delivery's commit, which applied nothing (%s)", e.Key, e.Token, now)
}

func (e *FencedError) Is(target error) bool { return target == ErrFenced || target == ErrRetryable }

// StaleLeaseError reports a pending claim, left by a delivery that crashed
// or timed out, first claimed longer ago than LeaseOptions.KeyLifetime:
// the services called may have forgotten its key, so calling again could
// apply twice, and the kit takes no new lease. Check the service for the
// key's effect, then delete the claim record (to have it run again) or
// complete it by hand. Nothing was done.
type StaleLeaseError struct {
	Key         string
	ClaimedAt   time.Time
	KeyLifetime time.Duration
}

func (e *StaleLeaseError) Error() string {
	return fmt.Sprintf("idem: %q: pending since %s, longer than the key lifetime (%v): no new lease is taken, as the services called may no longer deduplicate the key; check them, then delete or complete the claim",
		e.Key, e.ClaimedAt.UTC().Format(time.RFC3339), e.KeyLifetime)
}
