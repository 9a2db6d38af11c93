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
// been deleted by TTL.
func (s *Store) claim(rec Record, now time.Time) types.TransactWriteItem {
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
	return types.TransactWriteItem{Put: &types.Put{
		TableName:           &s.table,
		Item:                item,
		ConditionExpression: aws.String("attribute_not_exists(#k) OR #e < :now"),
		ExpressionAttributeNames: map[string]string{
			"#k": a.Key,
			"#e": a.ExpiresAt,
		},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":now": &types.AttributeValueMemberN{Value: strconv.FormatInt(now.Unix(), 10)},
		},
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
	return rec
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
