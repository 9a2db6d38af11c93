package idem

import (
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
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

// RetryableError reports a transient failure after Attempts tries.
type RetryableError struct {
	Key      string
	Attempts int
	Err      error
}

func (e *RetryableError) Error() string {
	return fmt.Sprintf("idem: %q: transient failure after %d attempt(s): %v", e.Key, e.Attempts, e.Err)
}

func (e *RetryableError) Is(target error) bool { return target == ErrRetryable }
func (e *RetryableError) Unwrap() error        { return e.Err }

// HandlerError wraps the error a Handler returned; nothing was committed.
type HandlerError struct {
	Key string
	Err error
}

func (e *HandlerError) Error() string { return fmt.Sprintf("idem: %q: handler: %v", e.Key, e.Err) }
func (e *HandlerError) Unwrap() error { return e.Err }

// PanicError reports a Handler that panicked; nothing was committed. The
// panic is returned rather than re-raised so that one bad message cannot
// take a whole batch down with it.
type PanicError struct {
	Key   string
	Value any
	Stack []byte
}

func (e *PanicError) Error() string {
	return fmt.Sprintf("idem: %q: handler panicked: %v", e.Key, e.Value)
}

// StoreError wraps a DynamoDB error that is neither transient nor the
// message's fault (a missing table, denied access); nothing was committed.
type StoreError struct {
	Key string
	Err error
}

func (e *StoreError) Error() string { return fmt.Sprintf("idem: %q: store: %v", e.Key, e.Err) }
func (e *StoreError) Unwrap() error { return e.Err }
