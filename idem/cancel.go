package idem

import (
	"context"
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"
)

// What a refused transaction means for each delivery it held: contention
// and throttling sent again after a backoff (retry.go), a failed claim
// condition a Duplicate, a key reuse or a lease held (claim.go), a failed
// condition of the effect a rejection, recorded in the effect's place when
// Effect.Rejected is set, a pending claim whose lease ended taken over.

// refused reads err, the cancellation of d's own actions or the call's
// error, for d. It says whether d is to be sent again at once (to take an
// ended lease over, or to record its rejection); after contention or
// throttling within its retries, d goes to c.waiting instead.
func (c *commitRun) refused(d *delivery, err error, sent *sendLog) bool {
	retry := retryable(err)
	var res Result
	if !retry {
		if res, err = c.s.failure(c.ctx, d, err, sent); err == nil { // a Duplicate, most often
			c.answer(d, res, nil)
			return false
		}
	}
	if d.tx.kind == freshClaim {
		if lh, ok := errors.AsType[*LeaseHeldError](err); ok && lh.ended(c.s.opts.Now()) {
			d.tx.kind, d.tx.over = overEndedLease, &lh.stored
			c.measure([]*delivery{d})
			return true
		}
	}
	if retry {
		d.tx.retries.start, d.tx.refusal = c.retries.start, err
		if d.tx.retries.refused(c.ctx, c.s, err) {
			c.waiting = append(c.waiting, d)
			c.backoff = max(c.backoff, d.tx.retries.refusals)
			return false
		}
		err = d.tx.retries.gaveUp(d.key.name, d.tx.sends, err)
	} else if re, ok := errors.AsType[*RetryableError](err); ok {
		re.Attempts = d.tx.sends // every send of this delivery, not just this call's
	} else if rej, ok := errors.AsType[*RejectedError](err); ok && d.tx.rej == nil && d.rejected != nil {
		rec, rerr := c.s.rejection(d.claim, d.rejected, rej)
		if rerr == nil {
			d.claim, d.tx.writes, d.tx.writesSize, d.tx.rej = rec, nil, 0, rej
			c.measure([]*delivery{d})
			return true
		}
		err = rerr
	}
	c.answer(d, res, err)
	return false
}

// rejection is rec recording rej as the message's outcome: a claim without
// the effect, whose response rejected (the effect's Rejected) gives.
func (s *Store) rejection(rec Record, rejected func(*RejectedError) ([]byte, error), rej *RejectedError) (Record, error) {
	var resp []byte
	var rerr error
	if p := recoverPanic("Effect.Rejected", func() { resp, rerr = rejected(rej) }); p != nil {
		p.Key = rec.Key
		return Record{}, p
	}
	if rerr != nil {
		return Record{}, &HandlerError{Key: rec.Key, Err: fmt.Errorf("Effect.Rejected: %w", rerr)}
	}
	rec.Outcome, rec.Response = Rejected, resp
	if len(rec.Response) > s.opts.MaxResponseBytes {
		return Record{}, &InvalidError{Key: rec.Key, Reason: fmt.Sprintf("rejection response is %d bytes; the limit is %d (Options.MaxResponseBytes)", len(rec.Response), s.opts.MaxResponseBytes)}
	}
	return rec, nil
}

// retryable says whether a failed TransactWriteItems is worth another
// attempt: a cancellation that blames only contention and throttling, or
// another write's contention (a global table's write in another Region).
func retryable(err error) bool {
	var tce *types.TransactionCanceledException
	if !errors.As(err, &tce) {
		return isContention(err)
	}
	retry := false
	for _, r := range tce.CancellationReasons {
		switch aws.ToString(r.Code) {
		case "ConditionalCheckFailed", "ValidationError":
			return false
		case "TransactionConflict", "ThrottlingError", "ProvisionedThroughputExceeded":
			retry = true
		}
	}
	return retry
}

// failure is what a failed TransactWriteItems not worth another attempt
// (retryable) means for d: the cancellation of its own actions, or the
// call's error. sent tells whether a request went out: an error that is
// not DynamoDB's answer may follow a commit.
func (s *Store) failure(ctx context.Context, d *delivery, err error, sent *sendLog) (Result, error) {
	key, writes := d.key.name, d.tx.writes
	if nf := s.tableNotFound(ctx, key, writes, err); nf != nil {
		return Result{}, nf
	}
	var tce *types.TransactionCanceledException
	if !errors.As(err, &tce) {
		return Result{}, callError(key, "", err, sent)
	}
	reasons := tce.CancellationReasons
	if len(reasons) > 0 && aws.ToString(reasons[0].Code) == "ConditionalCheckFailed" {
		return s.claimMet(d, reasons[0].Item)
	}
	for i, r := range reasons {
		switch aws.ToString(r.Code) {
		case "ConditionalCheckFailed":
			if i > 0 && i <= len(writes) && outboxID(writes[i-1]) != "" {
				oid := outboxID(writes[i-1])
				return Result{}, &InvalidError{Key: key, Reason: fmt.Sprintf("the outgoing message %s: its key %q is another item's: do Stores share the table without distinct KeyPrefixes?", oid, s.outboxKey(oid)), Server: true}
			}
			if i > 0 && i <= len(writes) {
				return Result{}, &RejectedError{Key: key, Index: i - 1, Table: writeTable(writes[i-1]), Item: r.Item}
			}
		case "ValidationError":
			what := fmt.Sprintf("effect write %d", i-1)
			switch {
			case i == 0:
				what = "the claim"
			case i <= len(writes) && outboxID(writes[i-1]) != "":
				what = "the outgoing message " + outboxID(writes[i-1])
			case i <= len(writes): // DynamoDB's message names no table
				what += " on " + writeTable(writes[i-1])
			}
			return Result{}, &InvalidError{Key: key, Reason: what + ": " + aws.ToString(r.Message), Server: true}
		}
	}
	return Result{}, &StoreError{Key: key, Err: err}
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
