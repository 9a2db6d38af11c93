package idem

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/idemkit/kit/idem/internal/wire"
)

// The claim: its key, what tells its message from others under that key,
// the record that holds it in the processed-ids table, and what a stored
// claim means for a new delivery.

// Record is a claim record as stored in the processed-ids table.
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

// Fingerprint is the SHA-256 of a payload, in hex: what tells a redelivery
// from a reuse of its id.
func Fingerprint(payload []byte) string {
	sum := sha256.Sum256(payload)
	return hex.EncodeToString(sum[:])
}

// claimKey is the claim record's partition key value:
// KeyPrefix + scope + "#" + id.
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

// identify checks msg and returns the claim it would make: its key, its
// fingerprint and its payload's digest.
func (s *Store) identify(msg Message) (Record, error) {
	key := s.claimKey(msg)
	if msg.Source != "" {
		if err := s.checkSource(msg.Source); err != nil {
			return Record{Key: key}, &InvalidError{Key: key, Reason: err.Error()}
		}
	}
	switch {
	case msg.ID == "":
		return Record{}, &InvalidError{Reason: "empty message id"}
	case !utf8.ValidString(key):
		return Record{Key: key}, &InvalidError{Key: key, Reason: "message id is not valid UTF-8"}
	case len(key) > maxPartitionKeyBytes:
		return Record{Key: key}, &InvalidError{Key: key[:64] + "…", Reason: fmt.Sprintf("claim key is %d bytes; DynamoDB allows %d", len(key), maxPartitionKeyBytes)}
	}
	digest := Fingerprint(msg.Payload)
	fp := msg.Fingerprint
	if fp == "" {
		fp = digest
	}
	return Record{Key: key, Source: msg.Source, Fingerprint: fp, PayloadDigest: digest}, nil
}

// CloudWatch's limit on a dimension value (API reference, "Dimension").
const maxDimensionValueBytes = 1024

// checkSource says why source cannot be a message's Source for this Store:
// it is the metrics' dimension value, which CloudWatch takes as 1 to 1,024
// printable ASCII characters, not all spaces (it drops a metric with any
// other); and, when the Store has no Options.Scope, it is the scope of the
// message's key, which holds no "#".
func (s *Store) checkSource(source string) error {
	if err := checkMetricName("Source", source, maxDimensionValueBytes); err != nil {
		return err
	}
	if s.opts.Scope == "" && strings.Contains(source, "#") {
		return fmt.Errorf("source %q holds a \"#\", which would make claim keys ambiguous as their scope; set idem.Options.Scope, or choose a Source without one", source)
	}
	return nil
}

// checkMetricName accepts 1 to max printable ASCII characters, not all
// spaces.
func checkMetricName(what, v string, max int) error {
	switch {
	case v == "":
		return fmt.Errorf("%s is empty", what)
	case len(v) > max:
		return fmt.Errorf("%s is %d bytes; CloudWatch allows %d", what, len(v), max)
	case strings.TrimSpace(v) == "":
		return fmt.Errorf("%s is all spaces; CloudWatch needs a character that is not", what)
	}
	for i := 0; i < len(v); i++ {
		if c := v[i]; c < ' ' || c > '~' {
			return fmt.Errorf("%s %q has a control or non-ASCII character at byte %d; CloudWatch takes printable ASCII only", what, v, i)
		}
	}
	return nil
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
// lease-mode delivery, is taken over by another Put (lease.go), at the
// cost of a second transaction only then: a longer condition here would
// slow every claim.
func (s *Store) claim(rec Record) types.TransactWriteItem {
	a := s.opts.Attributes
	return s.put(rec, "attribute_not_exists(#k) OR #e < :now",
		map[string]string{"#k": a.Key, "#e": a.ExpiresAt},
		map[string]types.AttributeValue{
			":now": &types.AttributeValueMemberN{Value: strconv.FormatInt(rec.ClaimedAt.Unix(), 10)},
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

// met is what a claim whose condition failed met: the stored item its
// cancellation returned. A claim of another message's key is key reuse; a
// pending claim, a lease still held (or ended, for the caller to take
// over); otherwise the delivery is a Duplicate of the stored claim. An
// outbox item under the key is a clash of two Stores' keys.
func (s *Store) met(rec Record, item map[string]types.AttributeValue) (Result, error) {
	if isOutboxItem(item) {
		return Result{}, errOutboxKey(rec.Key)
	}
	return s.meet(rec, s.decodeRecord(item))
}

// meet is what stored, a claim DynamoDB holds (or the cache remembers),
// means for a delivery whose claim would be rec.
func (s *Store) meet(rec, stored Record) (Result, error) {
	switch {
	case !sameMessage(stored, rec):
		return Result{}, &KeyReuseError{Key: rec.Key, Fingerprint: rec.Fingerprint, Stored: stored}
	case stored.Outcome == Pending:
		return Result{}, held(rec.Key, stored)
	}
	return Result{Outcome: Duplicate, Record: stored, PayloadChanged: stored.PayloadDigest != rec.PayloadDigest}, nil
}

// sameMessage says whether a delivery whose record is rec is a redelivery
// of the message stored holds, rather than a reuse of its key: the same
// fingerprint, or the same bytes (as when a sender's fingerprint changed
// from the payload's digest to a provider's identity, with claims of the
// old kind still stored).
func sameMessage(stored, rec Record) bool {
	return stored.Fingerprint == rec.Fingerprint || stored.PayloadDigest == rec.PayloadDigest
}

// errOutboxKey: a claim key that is an outbox item's key, as when Stores
// share a table without distinct KeyPrefixes.
func errOutboxKey(key string) error {
	return &InvalidError{Key: key, Reason: "the claim key is an outbox item's: do Stores share the table without distinct KeyPrefixes?", Server: true}
}
