package idem

import (
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemkit/kit/idem/internal/wire"
)

// The claim record, as the processed-ids table holds it and as a read of
// it decodes, and what the item a failed claim returned means
// (claimFailed): written by transact.go's Put, its key made by identify
// (process.go), what a stored one answers a delivery by storedAnswer
// (answer.go).

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
	// keyItem is the claim's primary key (Store.keyItem), built once by
	// identify for the claim's reads and writes, which must not change it.
	keyItem map[string]types.AttributeValue
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

// claimFailed is what a claim whose condition failed met: the stored item its
// cancellation returned. A claim of another message's key is key reuse; a
// pending claim, a lease still held (or ended, for the caller to take
// over); otherwise the delivery is a Duplicate of the stored claim. An
// outbox item under the key is a clash of two Stores' keys.
func (s *Store) claimFailed(rec Record, item map[string]types.AttributeValue) (Result, error) {
	if isOutboxItem(item) {
		return Result{}, errOutboxKey(rec.Key)
	}
	return s.storedAnswer(rec, s.decodeRecord(item))
}

// errOutboxKey: a claim key that is an outbox item's key, as when Stores
// share a table without distinct KeyPrefixes.
func errOutboxKey(key string) error {
	return &InvalidError{Key: key, Reason: "the claim key is an outbox item's: do Stores share the table without distinct KeyPrefixes?", Server: true}
}
