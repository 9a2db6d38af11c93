// Package wire is what the kit stores, as every package that reads it
// reads it: a claim record's default attribute names, an outbox item's
// attributes and id, and the EventBridge detail the relay sends. The kit
// writes them (idem), its relay, tests and commands read them (idem/outbox,
// idemtest, idem/cmd), none another way.
package wire

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// A claim record's attribute names where idem.Options.Attributes leaves one
// empty (its field docs say so, each once).
const (
	ClaimKeyAttr      = "pk"
	ExpiresAtAttr     = "expiresAt"
	ClaimedAtAttr     = "claimedAt"
	SourceAttr        = "source"
	FingerprintAttr   = "fingerprint"
	PayloadDigestAttr = "payloadDigest"
	OutcomeAttr       = "outcome"
	ResponseAttr      = "response"
	LeaseUntilAttr    = "leaseUntil"
	TokenAttr         = "fence"
	LeaseIDAttr       = "leaseId"
)

// An outbox item's attribute names, besides the table's key and its TTL
// attribute (idem.Options.Attributes.Key, SortKey and ExpiresAt).
const (
	KindAttr        = "kind"        // Kind (S): tells outbox items from claims in a shared table
	IDAttr          = "outboxId"    // the message's id (S)
	DestinationAttr = "destination" // OutgoingMessage.Destination (S)
	TypeAttr        = "type"        // OutgoingMessage.Type (S), absent when empty
	BodyAttr        = "body"        // OutgoingMessage.Body (S)
	AttributesAttr  = "attributes"  // OutgoingMessage.Attributes (M of S), absent when empty
	GroupAttr       = "groupId"     // OutgoingMessage.GroupID or its default (S)
	ClaimAttr       = "claimKey"    // the claim key of the message that sent it (S)
	CreatedAtAttr   = "createdAt"   // when it was written, RFC 3339 (S)
	IndexAttr       = "index"       // its index in Effect.Messages (N)
	TraceParentAttr = "traceparent" // the committing delivery's W3C trace context (S), on outbox items and claims; absent when untraced

	// Kind is the value of KindAttr on every outbox item.
	Kind = "outbox"
)

// ID is the id of the outgoing message at index i of the effect committed
// with a claim: of table (the processed-ids table), under key, claimed at
// claimedAt. The claim's time is its generation: a message claimed again
// once its claim expired is another message, and its outgoing messages
// get other ids, as do those of another table's claim under the same key.
// 32 hex digits, fit for an SQS deduplication id and a message attribute.
func ID(table, key string, claimedAt time.Time, i int) string {
	h := sha256.New()
	for _, part := range []string{"idem.outbox.v2", table, key, claimedAt.UTC().Format(time.RFC3339Nano), strconv.Itoa(i)} {
		// Each part with its length: no two lists of parts read the same.
		h.Write(strconv.AppendInt(nil, int64(len(part)), 10))
		h.Write([]byte{':'})
		h.Write([]byte(part))
	}
	return hex.EncodeToString(h.Sum(nil)[:16])
}

// KeyField is the detail field the relay adds to an EventBridge event.
const KeyField = "idempotencyKey"

// CheckDetail says why body cannot be an EventBridge event's detail: it
// must be a JSON object without a top-level field that encoding/json, which
// matches field names case-insensitively and keeps the last it reads, would
// take for KeyField ("IdempotencyKey", "IDEMPOTENCYKEY", …): such a field
// would shadow the key the relay adds for a Go consumer.
func CheckDetail(body string) error {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal([]byte(body), &fields); err != nil || fields == nil {
		return errors.New("it is not a JSON object")
	}
	for name := range fields {
		// strings.EqualFold folds as encoding/json does (Unicode simple
		// folding, the Kelvin sign included).
		if strings.EqualFold(name, KeyField) {
			return fmt.Errorf("it has a top-level %q field, which a Go decoder takes for the %q the relay adds", name, KeyField)
		}
	}
	return nil
}

// Detail is the EventBridge detail the relay sends for the outbox item id
// whose body passed CheckDetail: the body with KeyField first.
func Detail(id, body string) string {
	rest := strings.TrimSpace(strings.TrimSpace(body)[1:]) // after the object's "{"
	sep := ","
	if rest == "}" {
		sep = ""
	}
	return `{"` + KeyField + `":` + strconv.Quote(id) + sep + rest
}

// KeyHash is a claim key as spans name it (idem.key.sha256): its SHA-256,
// the first 8 bytes in hex, so that a trace can be found by key without
// the key, which may be personal data, in clear.
func KeyHash(key string) string {
	sum := sha256.Sum256([]byte(key))
	return hex.EncodeToString(sum[:8])
}
