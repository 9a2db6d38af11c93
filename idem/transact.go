package idem

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemkit/kit/idem/internal/wire"
)

// The transaction that commits a claim with its effect: the claim's
// conditional Put, the effect's writes (and outbox items) with it, sent
// and retried; and what its failures mean.

// commitEffect commits rec with eff under a new claim of rec.Key. A
// pending claim whose lease ended, left by a lease-mode delivery, is
// committed over, in a second transaction only then: this delivery's
// handler calls nothing out.
func (s *Store) commitEffect(ctx context.Context, rec Record, eff Effect) (Result, error) {
	res, err := s.commitOrReject(ctx, claimAction{s.claim, s.claimFailed}, rec, eff)
	if lh := (*LeaseHeldError)(nil); errors.As(err, &lh) && lh.ended(s.opts.Now()) {
		res, err = s.commitOrReject(ctx, s.takeover(lh.stored), rec, eff)
	}
	return res, err
}

// commitOrReject commits rec and eff's writes under c's claim and, when a
// condition of the writes fails and eff.Rejected is set, the rejection in
// their place.
func (s *Store) commitOrReject(ctx context.Context, c claimAction, rec Record, eff Effect) (Result, error) {
	start := time.Now()
	unlock, err := s.items.lock(ctx, eff.items)
	if err != nil {
		return Result{}, &ContendedError{Key: rec.Key, Waited: time.Since(start), Err: fmt.Errorf("waiting for this process's other transactions on the effect's items: %w", err)}
	}
	defer unlock()
	res, err := s.commit(ctx, c, rec, eff.Writes)
	var rej *RejectedError
	if eff.Rejected == nil || !errors.As(err, &rej) {
		return res, err
	}
	if rec, err = s.rejection(rec, eff, rej); err != nil {
		return Result{}, err
	}
	res, err = s.commit(ctx, c, rec, nil)
	if err == nil && res.Outcome == Processed {
		res.Outcome, res.Rejection = Rejected, rej
	}
	return res, err
}

// rejection is rec recording rej as the message's outcome: a claim without
// the effect, whose response eff.Rejected gives.
func (s *Store) rejection(rec Record, eff Effect, rej *RejectedError) (Record, error) {
	var resp []byte
	var rerr error
	if p := recoverPanic("Effect.Rejected", func() { resp, rerr = eff.Rejected(rej) }); p != nil {
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

// claimAction is how a transaction claims a key: the claim's Put for a
// record, and what the item its failed condition returned means. Process
// claims a key no live claim holds (Store.claim, Store.claimFailed); a
// lease takes over or commits its own pending claim (lease.go).
type claimAction struct {
	put    func(Record) types.TransactWriteItem
	failed func(Record, map[string]types.AttributeValue) (Result, error)
}

// claim is the conditional Put that claims rec.Key: it succeeds when no
// record holds the key, or when the one that does has expired but not yet
// been deleted by TTL. A pending claim whose lease ended, left by a
// lease-mode delivery, is taken over by another Put (lease.go), at the
// cost of a second transaction only then: a longer condition here would
// slow every claim.
func (s *Store) claim(rec Record) types.TransactWriteItem {
	return s.put(rec, "attribute_not_exists(#k) OR #e < :now", s.claimNames,
		map[string]types.AttributeValue{
			":now": &types.AttributeValueMemberN{Value: strconv.FormatInt(rec.ClaimedAt.Unix(), 10)},
		})
}

// put is the Put of rec, on condition.
func (s *Store) put(rec Record, condition string, names map[string]string, values map[string]types.AttributeValue) types.TransactWriteItem {
	a := s.opts.Attributes
	item := maps.Clone(rec.keyItem) // identify's, which other reads and writes share
	item[a.ExpiresAt] = &types.AttributeValueMemberN{Value: strconv.FormatInt(rec.ExpiresAt.Unix(), 10)}
	item[a.ClaimedAt] = &types.AttributeValueMemberS{Value: rec.ClaimedAt.UTC().Format(time.RFC3339Nano)}
	item[a.Source] = &types.AttributeValueMemberS{Value: rec.Source}
	item[a.Fingerprint] = &types.AttributeValueMemberS{Value: rec.Fingerprint}
	if rec.PayloadDigest != rec.Fingerprint {
		item[a.PayloadDigest] = &types.AttributeValueMemberS{Value: rec.PayloadDigest}
	}
	item[a.Outcome] = &types.AttributeValueMemberS{Value: string(rec.Outcome)}
	if len(rec.Response) > 0 {
		item[a.Response] = &types.AttributeValueMemberB{Value: rec.Response}
	}
	if rec.Token != 0 { // kept, so that a later lease's token is larger
		item[a.Token] = &types.AttributeValueMemberN{Value: strconv.FormatInt(rec.Token, 10)}
	}
	if rec.traceparent != "" { // which delivery committed it: its trace (idem inspect shows it)
		item[wire.TraceParentAttr] = &types.AttributeValueMemberS{Value: rec.traceparent}
	}
	return types.TransactWriteItem{Put: &types.Put{
		TableName:                           &s.table,
		Item:                                item,
		ConditionExpression:                 aws.String(condition),
		ExpressionAttributeNames:            names,
		ExpressionAttributeValues:           values,
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	}}
}

// commit sends c's claim of rec and writes as one transaction, retrying
// contention and throttling with jittered backoff (retries).
func (s *Store) commit(ctx context.Context, c claimAction, rec Record, writes []types.TransactWriteItem) (Result, error) {
	items := make([]types.TransactWriteItem, 0, len(writes)+1)
	items = append(items, c.put(rec))
	items = append(items, writes...)
	var sent sendLog
	r := newRetries()
	for {
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
			rec.keyItem = nil // the Store's own: a Result's Record is the record as stored
			return Result{Outcome: Processed, Record: rec}, nil
		}
		if !retryable(err) {
			return s.failure(ctx, c, rec, writes, err, &sent)
		}
		if !r.refused(ctx, s, err) || r.wait(ctx, s) != nil {
			return Result{}, r.gaveUp(rec.Key, sent.count(), err)
		}
	}
}

// retryable says whether a failed TransactWriteItems is worth another
// attempt: a cancellation that blames only conflicts and throttling, or
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

// failure is the delivery's outcome from a failed TransactWriteItems not
// worth another attempt (retryable). sent tells whether a request went
// out: an error that is not DynamoDB's answer may follow a commit.
func (s *Store) failure(ctx context.Context, c claimAction, rec Record, writes []types.TransactWriteItem, err error, sent *sendLog) (Result, error) {
	if nf := s.tableNotFound(ctx, rec.Key, writes, err); nf != nil {
		return Result{}, nf
	}
	var tce *types.TransactionCanceledException
	if !errors.As(err, &tce) {
		return Result{}, callError(rec.Key, "", err, sent)
	}
	reasons := tce.CancellationReasons
	if len(reasons) > 0 && aws.ToString(reasons[0].Code) == "ConditionalCheckFailed" {
		return c.failed(rec, reasons[0].Item)
	}
	for i, r := range reasons {
		switch aws.ToString(r.Code) {
		case "ConditionalCheckFailed":
			if i > 0 && i <= len(writes) && outboxID(writes[i-1]) != "" {
				id := outboxID(writes[i-1])
				return Result{}, &InvalidError{Key: rec.Key, Reason: fmt.Sprintf("the outgoing message %s: its key %q is another item's: do Stores share the table without distinct KeyPrefixes?", id, s.outboxKey(id)), Server: true}
			}
			if i > 0 && i <= len(writes) {
				return Result{}, &RejectedError{Key: rec.Key, Index: i - 1, Table: writeTable(writes[i-1]), Item: r.Item}
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
			return Result{}, &InvalidError{Key: rec.Key, Reason: what + ": " + aws.ToString(r.Message), Server: true}
		}
	}
	return Result{}, &StoreError{Key: rec.Key, Err: err}
}
