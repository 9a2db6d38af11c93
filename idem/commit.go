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
)

// The transaction that commits a claim with its effect, and what its
// failures mean.

// commit sends claim, rec's, and writes as one transaction, retrying
// conflicts and throttling with jittered backoff within ctx's deadline.
func (s *Store) commit(ctx context.Context, claim types.TransactWriteItem, rec Record, writes []types.TransactWriteItem) (Result, error) {
	items := make([]types.TransactWriteItem, 0, len(writes)+1)
	items = append(items, claim)
	items = append(items, writes...)
	var sent sendLog
	for attempt := 1; ; attempt++ {
		// A new input each attempt, its ClientRequestToken nil: the SDK
		// fills the token in and reuses it across its own retries, which
		// makes an ambiguous commit safe to resend; our retries after a
		// cancellation are new transactions and need a new token.
		in := &dynamodb.TransactWriteItemsInput{TransactItems: items}
		_, err := s.client.TransactWriteItems(ctx, in, sent.option)
		sent.attempts++
		if err == nil {
			return Result{Outcome: Processed, Record: rec}, nil
		}
		res, err, retry := s.classify(rec, writes, err, &sent)
		if !retry {
			return res, err
		}
		if attempt >= s.opts.MaxAttempts {
			return Result{}, &RetryableError{Key: rec.Key, Attempts: sent.count(), Err: err}
		}
		if err := s.sleep(ctx, attempt); err != nil {
			return Result{}, &RetryableError{Key: rec.Key, Attempts: sent.count(), Err: err}
		}
	}
}

// classify turns a failed TransactWriteItems into the delivery's outcome,
// or says it is worth another attempt. sent tells whether a request went
// out: an error that is not DynamoDB's answer may follow a commit.
func (s *Store) classify(rec Record, writes []types.TransactWriteItem, err error, sent *sendLog) (Result, error, bool) {
	var tce *types.TransactionCanceledException
	if !errors.As(err, &tce) {
		return Result{}, callError(rec.Key, "", err, sent), false
	}
	reasons := tce.CancellationReasons
	if len(reasons) > 0 && aws.ToString(reasons[0].Code) == "ConditionalCheckFailed" {
		if isOutboxItem(reasons[0].Item) {
			return Result{}, errOutboxKey(rec.Key), false
		}
		stored := s.decodeRecord(reasons[0].Item)
		switch {
		case rec.Token != 0: // a lease's commit: whatever holds the key now, it is not this lease
			return Result{}, &FencedError{Key: rec.Key, Token: rec.Token, Stored: stored}, false
		case len(reasons[0].Item) == 0: // a takeover's pending claim, gone meanwhile (deleted by hand, or by TTL)
			return Result{}, &RetryableError{Key: rec.Key, Attempts: sent.count(), Err: errors.New("the pending claim to take over is gone; the retry claims afresh")}, false
		case !sameMessage(stored, rec):
			return Result{}, &KeyReuseError{Key: rec.Key, Fingerprint: rec.Fingerprint, Stored: stored}, false
		case stored.Outcome == Pending:
			return Result{}, &LeaseHeldError{Key: rec.Key, Until: stored.LeaseUntil.Add(takeoverSkew), stored: stored}, false
		}
		return duplicate(stored, rec), nil, false
	}
	retry := false
	for i, r := range reasons {
		switch aws.ToString(r.Code) {
		case "ConditionalCheckFailed":
			if i > 0 && i <= len(writes) && outboxID(writes[i-1]) != "" {
				return Result{}, &InvalidError{Key: rec.Key, Reason: fmt.Sprintf("the outgoing message %s: its key %q is another item's: do Stores share the table without distinct KeyPrefixes?", outboxID(writes[i-1]), s.outboxKey(outboxID(writes[i-1]))), Server: true}, false
			}
			if i > 0 && i <= len(writes) {
				return Result{}, &RejectedError{Key: rec.Key, Index: i - 1, Table: writeTable(writes[i-1]), Item: r.Item}, false
			}
		case "TransactionConflict", "ThrottlingError", "ProvisionedThroughputExceeded":
			retry = true
		case "ValidationError":
			what := fmt.Sprintf("effect write %d", i-1)
			switch {
			case i == 0:
				what = "the claim"
			case i <= len(writes) && outboxID(writes[i-1]) != "":
				what = "the outgoing message " + outboxID(writes[i-1])
			}
			return Result{}, &InvalidError{Key: rec.Key, Reason: what + ": " + aws.ToString(r.Message), Server: true}, false
		}
	}
	if retry {
		return Result{}, err, true
	}
	return Result{}, &StoreError{Key: rec.Key, Err: err}, false
}

// errOutboxKey: a claim key that is an outbox item's key, as when a Store
// that shares the table without a distinct KeyPrefix sends messages.
func errOutboxKey(key string) error {
	return &InvalidError{Key: key, Reason: "the claim key is an outbox item's: do Stores share the table without distinct KeyPrefixes?", Server: true}
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
		}
		return ae.ErrorFault() == smithy.FaultServer
	}
	return false
}

func writeTable(w types.TransactWriteItem) string {
	table, _, _, _ := describeWrite(w)
	return table
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
