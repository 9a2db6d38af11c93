package main

import (
	"context"
	"math/rand/v2"
	"time"
)

// The Store's backoff, as idem.Options documents its defaults: the
// command's own calls meet the same contention as a delivery's.
const (
	maxAttempts = 5                     // idem.Options.MaxAttempts
	backoffBase = 25 * time.Millisecond // idem.Options.BackoffBase
	backoffMax  = time.Second           // idem.Options.BackoffMax
)

// contended says whether err is DynamoDB's answer that another write held
// the item at that moment: a transaction writing it
// (TransactionConflictException) or a write in another Region of a global
// table (ReplicatedWriteConflictException). The SDK does not retry either;
// neither says whether the item is there or what it holds.
func contended(err error) bool {
	return isCode(err, "TransactionConflictException") || isCode(err, "ReplicatedWriteConflictException")
}

// retry runs call, one single-item DynamoDB call named op, again while it
// meets contention, at most maxAttempts times with full-jitter backoff;
// past them it is a failure that says so, never "not found" or "nothing
// deleted".
func retry(ctx context.Context, op string, call func() error) error {
	for attempt := 1; ; attempt++ {
		err := call()
		if !contended(err) {
			return err
		}
		if attempt == maxAttempts {
			return failf("contention: %s met another write on the item %d times (%v): nothing is known of the item yet; try again", op, attempt, err)
		}
		ceiling := min(backoffBase<<(attempt-1), backoffMax)
		t := time.NewTimer(time.Duration(rand.Int64N(int64(ceiling) + 1)))
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		}
	}
}
