package idem

import (
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// Fingerprint is the SHA-256 of a payload, in hex: what tells a redelivery
// from a reuse of its id.
func Fingerprint(payload []byte) string {
	sum := sha256.Sum256(payload)
	return hex.EncodeToString(sum[:])
}

// claimKey is the claim record's partition key value.
func (s *Store) claimKey(msg Message) string {
	scope := s.opts.Scope
	if scope == "" {
		scope = msg.Source
	}
	if scope == "" {
		scope = "default"
	}
	return s.opts.KeyPrefix + scope + "#" + msg.ID
}

// keyItem is the claim record's primary key.
func (s *Store) keyItem(key string) map[string]types.AttributeValue {
	a := s.opts.Attributes
	k := map[string]types.AttributeValue{a.Key: &types.AttributeValueMemberS{Value: key}}
	if a.SortKey != "" {
		k[a.SortKey] = &types.AttributeValueMemberS{Value: s.opts.SortKeyValue}
	}
	return k
}

// claim is the conditional Put that claims rec.Key: it succeeds when no
// record holds the key, or when the one that does has expired but not yet
// been deleted by TTL. A pending claim whose lease ended, left by a
// lease-mode delivery, is taken over by takeoverClaim instead, at the cost
// of a second transaction only then: a longer condition here would slow
// every claim.
func (s *Store) claim(rec Record, now time.Time) types.TransactWriteItem {
	a := s.opts.Attributes
	return s.put(rec, "attribute_not_exists(#k) OR #e < :now",
		map[string]string{"#k": a.Key, "#e": a.ExpiresAt},
		map[string]types.AttributeValue{
			":now": &types.AttributeValueMemberN{Value: strconv.FormatInt(now.Unix(), 10)},
		})
}

// takeoverClaim is the Put of rec over stored, a pending claim whose lease
// ended, on the condition that it is still that claim, under that lease.
func (s *Store) takeoverClaim(rec, stored Record) types.TransactWriteItem {
	a := s.opts.Attributes
	cond := "#o = :pending AND #l = :was"
	names := map[string]string{"#o": a.Outcome, "#l": a.LeaseUntil}
	values := map[string]types.AttributeValue{
		":pending": &types.AttributeValueMemberS{Value: string(Pending)},
		":was":     millis(stored.LeaseUntil),
	}
	if stored.lease != "" {
		cond += " AND #i = :lease"
		names["#i"] = a.LeaseID
		values[":lease"] = &types.AttributeValueMemberS{Value: stored.lease}
	}
	w := s.put(rec, cond, names, values)
	if stored.Token != 0 { // kept, so that a later lease's token is larger
		w.Put.Item[s.opts.Attributes.Token] = &types.AttributeValueMemberN{Value: strconv.FormatInt(stored.Token, 10)}
	}
	return w
}

// fencedClaim is the Put that turns the pending claim of rec's lease into
// rec: only while the claim is still pending under that lease, its id and
// its token.
func (s *Store) fencedClaim(rec Record) types.TransactWriteItem {
	a := s.opts.Attributes
	return s.put(rec, "#o = :pending AND #i = :lease AND #t = :token",
		map[string]string{"#o": a.Outcome, "#i": a.LeaseID, "#t": a.Token},
		map[string]types.AttributeValue{
			":pending": &types.AttributeValueMemberS{Value: string(Pending)},
			":lease":   &types.AttributeValueMemberS{Value: rec.lease},
			":token":   &types.AttributeValueMemberN{Value: strconv.FormatInt(rec.Token, 10)},
		})
}

// put is the Put of rec, on condition.
func (s *Store) put(rec Record, condition string, names map[string]string, values map[string]types.AttributeValue) types.TransactWriteItem {
	a := s.opts.Attributes
	item := s.keyItem(rec.Key)
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

// sameMessage says whether a delivery whose record is rec is a redelivery
// of the message stored holds, rather than a reuse of its key: the same
// fingerprint, or the same bytes (as when a sender's fingerprint changed
// from the payload's digest to a provider's identity, with claims of the
// old kind still stored).
func sameMessage(stored, rec Record) bool {
	return stored.Fingerprint == rec.Fingerprint || stored.PayloadDigest == rec.PayloadDigest
}

// duplicate is the Result of a delivery found to be a redelivery of stored.
func duplicate(stored, rec Record) Result {
	return Result{Outcome: Duplicate, Record: stored, PayloadChanged: stored.PayloadDigest != rec.PayloadDigest}
}
