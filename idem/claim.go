package idem

import (
	"errors"
	"maps"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemkit/kit/idem/internal/wire"
)

// Record is a claim record as stored in the processed-ids table: the one
// a delivery commits with its effect, or the one it found.
type Record struct {
	Key         string
	Source      string
	Fingerprint string
	// PayloadDigest is the SHA-256 of the payload, in hex. It is stored
	// only when it differs from Fingerprint; a stored record without it
	// reads as Fingerprint.
	PayloadDigest string
	ClaimedAt     time.Time
	ExpiresAt     time.Time
	// Outcome is Processed or Rejected, or Pending while a lease holds
	// the claim (ProcessLeased).
	Outcome  Outcome
	Response []byte
	// Token is the fencing token of the claim's last lease, and
	// LeaseUntil when a Pending claim's lease ends; zero for claims made
	// without a lease.
	Token      int64
	LeaseUntil time.Time

	lease       string // a Pending claim's lease id
	traceparent string // the delivery's trace context, stored with the claim and its outgoing messages
}

// newClaim is the claim k makes at now, kept for the retention.
func (s *Store) newClaim(k claimKey, now time.Time, traceparent string) Record {
	return Record{Key: k.name, Source: k.source, Fingerprint: k.fingerprint, PayloadDigest: k.digest,
		ClaimedAt: now, ExpiresAt: now.Add(s.opts.retention()), traceparent: traceparent}
}

// claimKind is how a transaction claims its key.
type claimKind int8

const (
	freshClaim     claimKind = iota // where no live claim holds the key: none, or one expired but not yet deleted by TTL
	overEndedLease                  // over a pending claim whose lease ended, left by a lease-mode delivery
	underLease                      // turning the delivery's own lease into its claim
)

// claimPut is the conditional Put of d's claim, as its kind claims. A
// fresh claim's condition is short, as every claim has it: a pending
// claim whose lease ended is taken over by another Put, at the cost of a
// second transaction only then.
func (s *Store) claimPut(d *delivery) types.TransactWriteItem {
	a := s.opts.Attributes
	rec := d.claim
	switch d.tx.kind {
	case overEndedLease:
		over := *d.tx.over
		cond := "#o = :pending AND #l = :was"
		names := map[string]string{"#o": a.Outcome, "#l": a.LeaseUntil}
		values := map[string]types.AttributeValue{
			":pending": &types.AttributeValueMemberS{Value: string(Pending)},
			":was":     millis(over.LeaseUntil),
		}
		if over.lease != "" {
			cond += " AND #i = :lease"
			names["#i"] = a.LeaseID
			values[":lease"] = &types.AttributeValueMemberS{Value: over.lease}
		}
		rec.Token = max(rec.Token, over.Token) // kept, so that a later lease's token is larger
		return s.put(rec, d.key.item, cond, names, values)
	case underLease:
		return s.put(rec, d.key.item, "#o = :pending AND #i = :lease AND #t = :token",
			map[string]string{"#o": a.Outcome, "#i": a.LeaseID, "#t": a.Token},
			map[string]types.AttributeValue{
				":pending": &types.AttributeValueMemberS{Value: string(Pending)},
				":lease":   &types.AttributeValueMemberS{Value: rec.lease},
				":token":   &types.AttributeValueMemberN{Value: strconv.FormatInt(rec.Token, 10)},
			})
	}
	return s.put(rec, d.key.item, "attribute_not_exists(#k) OR #e < :now", s.claimNames,
		map[string]types.AttributeValue{":now": &types.AttributeValueMemberN{Value: strconv.FormatInt(rec.ClaimedAt.Unix(), 10)}})
}

// claimMet is what the item d's claim's failed condition returned means,
// as its kind claims. A fresh claim met another message's (a key reuse),
// a pending claim (a lease held, or ended, to take over) or the message's
// own (a Duplicate); a takeover met a claim gone meanwhile (a retry claims
// afresh) or changed (as a fresh claim would meet it); a lease's commit
// met a claim that is no longer its lease's (fenced). An outbox item under
// the key is a clash of two Stores' keys.
func (s *Store) claimMet(d *delivery, item map[string]types.AttributeValue) (Result, error) {
	switch {
	case d.tx.kind == underLease:
		return Result{}, &FencedError{Key: d.key.name, Token: d.claim.Token, Stored: s.decodeRecord(item)}
	case d.tx.kind == overEndedLease && len(item) == 0:
		return Result{}, &RetryableError{Key: d.key.name, Attempts: 1, Err: errors.New("the pending claim to take over is gone; the retry claims afresh")}
	case isOutboxItem(item):
		return Result{}, errOutboxKey(d.key.name)
	}
	return answerFrom(d.key, s.decodeRecord(item))
}

// put is the Put of rec, keyed by item, on condition.
func (s *Store) put(rec Record, item map[string]types.AttributeValue, condition string, names map[string]string, values map[string]types.AttributeValue) types.TransactWriteItem {
	a := s.opts.Attributes
	item = maps.Clone(item) // the key's, which other reads and writes share
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

// decodeRecord reads a stored claim record; attributes it lacks stay zero.
func (s *Store) decodeRecord(item map[string]types.AttributeValue) Record {
	a := s.opts.Attributes
	str := func(name string) string {
		if v, ok := item[name].(*types.AttributeValueMemberS); ok {
			return v.Value
		}
		return ""
	}
	rec := Record{
		Key:         str(a.Key),
		Source:      str(a.Source),
		Fingerprint: str(a.Fingerprint),
		Outcome:     Outcome(str(a.Outcome)),
	}
	if rec.PayloadDigest = str(a.PayloadDigest); rec.PayloadDigest == "" {
		rec.PayloadDigest = rec.Fingerprint
	}
	if t, err := time.Parse(time.RFC3339Nano, str(a.ClaimedAt)); err == nil {
		rec.ClaimedAt = t
	}
	if v, ok := item[a.ExpiresAt].(*types.AttributeValueMemberN); ok {
		if sec, err := strconv.ParseInt(v.Value, 10, 64); err == nil {
			rec.ExpiresAt = time.Unix(sec, 0)
		}
	}
	if v, ok := item[a.Response].(*types.AttributeValueMemberB); ok {
		rec.Response = v.Value
	}
	rec.Token = number(item[a.Token])
	rec.traceparent = str(wire.TraceParentAttr)
	rec.lease = str(a.LeaseID)
	if ms := number(item[a.LeaseUntil]); ms != 0 {
		rec.LeaseUntil = time.UnixMilli(ms)
	}
	return rec
}

// number reads an N attribute, 0 when absent or unreadable.
func number(v types.AttributeValue) int64 {
	n, ok := v.(*types.AttributeValueMemberN)
	if !ok {
		return 0
	}
	i, _ := strconv.ParseInt(n.Value, 10, 64)
	return i
}

// millis is t in epoch milliseconds, 0 for the zero time (a released
// lease).
func millis(t time.Time) types.AttributeValue {
	var ms int64
	if !t.IsZero() {
		ms = t.UnixMilli()
	}
	return &types.AttributeValueMemberN{Value: strconv.FormatInt(ms, 10)}
}

// errOutboxKey: a claim key that is an outbox item's key, as when Stores
// share a table without distinct KeyPrefixes.
func errOutboxKey(key string) error {
	return &InvalidError{Key: key, Reason: "the claim key is an outbox item's: do Stores share the table without distinct KeyPrefixes?", Server: true}
}
