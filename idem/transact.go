package idem

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"slices"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"
	"github.com/aws/smithy-go/middleware"
)

// The transaction that commits a claim with its effect, and what its
// failures mean.

// claimant is a way to claim a key: the claim's Put for a record, and what
// the item a failed claim condition returned means. Process claims a key
// no live claim holds (Store.claim, Store.met); a lease takes over or
// commits its own pending claim (lease.go).
type claimant struct {
	put func(Record) types.TransactWriteItem
	met func(Record, map[string]types.AttributeValue) (Result, error)
}

// commit sends c's claim of rec and writes as one transaction, retrying
// conflicts and throttling with jittered backoff within ctx's deadline.
func (s *Store) commit(ctx context.Context, c claimant, rec Record, writes []types.TransactWriteItem) (Result, error) {
	items := make([]types.TransactWriteItem, 0, len(writes)+1)
	items = append(items, c.put(rec))
	items = append(items, writes...)
	var sent sendLog
	for attempt := 1; ; attempt++ {
		// A new input each attempt, its ClientRequestToken nil: the SDK
		// fills the token in and reuses it across its own retries, which
		// makes an ambiguous commit safe to resend; our retries after a
		// cancellation are new transactions and need a new token.
		in := &dynamodb.TransactWriteItemsInput{TransactItems: items}
		cctx, span := s.call(ctx, "TransactWriteItems", items)
		_, err := s.client.TransactWriteItems(cctx, in, sent.option)
		endCall(span, err)
		sent.attempts++
		if err == nil {
			return Result{Outcome: Processed, Record: rec}, nil
		}
		res, err, retry := s.classify(c, rec, writes, err, &sent)
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
func (s *Store) classify(c claimant, rec Record, writes []types.TransactWriteItem, err error, sent *sendLog) (Result, error, bool) {
	var tce *types.TransactionCanceledException
	if !errors.As(err, &tce) {
		return Result{}, callError(rec.Key, "", err, sent), false
	}
	reasons := tce.CancellationReasons
	if len(reasons) > 0 && aws.ToString(reasons[0].Code) == "ConditionalCheckFailed" {
		res, err := c.met(rec, reasons[0].Item)
		return res, err, false
	}
	retry := false
	for i, r := range reasons {
		switch aws.ToString(r.Code) {
		case "ConditionalCheckFailed":
			if i > 0 && i <= len(writes) && outboxID(writes[i-1]) != "" {
				id := outboxID(writes[i-1])
				return Result{}, &InvalidError{Key: rec.Key, Reason: fmt.Sprintf("the outgoing message %s: its key %q is another item's: do Stores share the table without distinct KeyPrefixes?", id, s.outboxKey(id)), Server: true}, false
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

// tablesOf is the tables items write, each once, for a call's span.
func tablesOf(items []types.TransactWriteItem) []string {
	var out []string
	for _, w := range items {
		if t := writeTable(w); t != "" && !slices.Contains(out, t) {
			out = append(out, t)
		}
	}
	return out
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
