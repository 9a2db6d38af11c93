package idem

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// OutgoingMessage is a message to another service that an effect sends
// through the transactional outbox: it is written as an outbox item in the
// same transaction as the message's claim and the effect's writes, so it
// exists exactly when the effect was applied, and a relay on the outbox's
// stream delivers it at least once. Its id, derived from the claim key and
// its place in Effect.Messages, is the same on every delivery of the
// message, so the consumer at the other end deduplicates on it.
type OutgoingMessage struct {
	// Destination is where the relay delivers the message: an SQS queue
	// URL (a FIFO queue's ends in ".fifo"), or "eventbridge:" followed by
	// an event bus's name or ARN. Required.
	Destination string

	// Type names the kind of message, such as "credit.applied": an
	// EventBridge event's detail-type, an SQS message's "Type" attribute.
	// Required for EventBridge; optional for SQS.
	Type string

	// Body is the message: an SQS message's body, or an EventBridge
	// event's detail, which must then be a JSON object. At most
	// MaxOutgoingBodyBytes, valid UTF-8, not empty.
	Body string

	// Attributes are string message attributes (SQS), at most 8 besides
	// the IdempotencyKey and Type attributes the relay adds.
	Attributes map[string]string

	// GroupID is the message group on a FIFO queue: messages of one group
	// are delivered in order. Defaults to the claim key, so that the
	// messages of one effect keep their order and others do not wait.
	GroupID string
}

// MaxOutgoingBodyBytes bounds an OutgoingMessage's Body: the smaller of
// an SQS message's and an EventBridge entry's limits (256 KiB), less room
// for the relay's own attributes.
const MaxOutgoingBodyBytes = 250 << 10

// Outbox items' attribute names, besides the table's key and its TTL
// attribute (Options.Attributes.Key, SortKey and ExpiresAt). The relay
// reads them from the stream's new images.
const (
	OutboxKindAttr        = "kind"        // "outbox" (S): tells outbox items from claims in a shared table
	OutboxIDAttr          = "outboxId"    // the message's id (S)
	OutboxDestinationAttr = "destination" // OutgoingMessage.Destination (S)
	OutboxTypeAttr        = "type"        // OutgoingMessage.Type (S), absent when empty
	OutboxBodyAttr        = "body"        // OutgoingMessage.Body (S)
	OutboxAttributesAttr  = "attributes"  // OutgoingMessage.Attributes (M of S), absent when empty
	OutboxGroupAttr       = "groupId"     // OutgoingMessage.GroupID or its default (S)
	OutboxClaimAttr       = "claimKey"    // the claim key of the message that sent it (S)
	OutboxCreatedAtAttr   = "createdAt"   // when it was written, RFC 3339 (S)

	// OutboxKind is the value of OutboxKindAttr on every outbox item.
	OutboxKind = "outbox"
)

// OutboxID is the id of the outgoing message at index i of the effect of
// the message whose claim key is key: the same on every delivery, distinct
// per message and per index, 32 hex digits, fit for an SQS deduplication
// id and a message attribute.
func OutboxID(key string, i int) string {
	sum := sha256.Sum256([]byte(key + "\x00outbox\x00" + strconv.Itoa(i)))
	return hex.EncodeToString(sum[:16])
}

// outboxKey is an outbox item's partition key value. A claim key is
// KeyPrefix + scope + "#" + id with a scope that is never empty, so no
// claim key starts with KeyPrefix + "#".
func (s *Store) outboxKey(id string) string {
	return s.opts.KeyPrefix + "#outbox#" + id
}

// addOutbox appends eff.Messages to eff.Writes as outbox items, after the
// handler's own writes (so a RejectedError's index still names one of
// those), and clears eff.Messages. A rejection recorded in the effect's
// place commits none of them.
func (s *Store) addOutbox(key string, eff *Effect, now time.Time) error {
	if len(eff.Messages) == 0 {
		return nil
	}
	a := s.opts.Attributes
	expires := strconv.FormatInt(now.Add(s.opts.OutboxRetention).Unix(), 10)
	created := now.UTC().Format(time.RFC3339Nano)
	for i, m := range eff.Messages {
		if err := checkOutgoing(m); err != nil {
			return &InvalidError{Key: key, Reason: fmt.Sprintf("outgoing message %d: %v", i, err)}
		}
		id := OutboxID(key, i)
		item := s.keyItem(s.outboxKey(id))
		str := func(name, v string) { item[name] = &types.AttributeValueMemberS{Value: v} }
		str(OutboxKindAttr, OutboxKind)
		str(OutboxIDAttr, id)
		str(OutboxDestinationAttr, m.Destination)
		str(OutboxBodyAttr, m.Body)
		str(OutboxClaimAttr, key)
		str(OutboxCreatedAtAttr, created)
		group := m.GroupID
		if group == "" {
			group = key
		}
		str(OutboxGroupAttr, group)
		if m.Type != "" {
			str(OutboxTypeAttr, m.Type)
		}
		if len(m.Attributes) > 0 {
			attrs := make(map[string]types.AttributeValue, len(m.Attributes))
			for k, v := range m.Attributes {
				attrs[k] = &types.AttributeValueMemberS{Value: v}
			}
			item[OutboxAttributesAttr] = &types.AttributeValueMemberM{Value: attrs}
		}
		item[a.ExpiresAt] = &types.AttributeValueMemberN{Value: expires}
		// Unconditional: the claim in the same transaction is what makes it
		// new; an item left by an expired claim of the same key is replaced.
		eff.Writes = append(eff.Writes, types.TransactWriteItem{Put: &types.Put{TableName: &s.opts.OutboxTable, Item: item}})
	}
	eff.Messages = nil
	return nil
}

// isDetail says whether body can be an EventBridge event's detail: a JSON
// object whose top level leaves "idempotencyKey" to the relay.
func isDetail(body string) bool {
	var fields map[string]json.RawMessage
	if json.Unmarshal([]byte(body), &fields) != nil || fields == nil {
		return false
	}
	_, taken := fields["idempotencyKey"]
	return !taken
}

// reservedAttributes are the SQS message attributes the relay sets.
var reservedAttributes = []string{"IdempotencyKey", "Type"}

// checkOutgoing refuses a message the relay could not deliver.
func checkOutgoing(m OutgoingMessage) error {
	switch {
	case m.Destination == "":
		return fmt.Errorf("no Destination")
	case !strings.HasPrefix(m.Destination, "https://") && !strings.HasPrefix(m.Destination, "http://") && !strings.HasPrefix(m.Destination, "eventbridge:"):
		return fmt.Errorf("Destination %q is neither an SQS queue URL nor \"eventbridge:\" and a bus", m.Destination)
	case m.Destination == "eventbridge:":
		return fmt.Errorf("Destination %q names no event bus", m.Destination)
	case strings.HasPrefix(m.Destination, "eventbridge:") && m.Type == "":
		return fmt.Errorf("an EventBridge event needs a Type, its detail-type")
	case strings.HasPrefix(m.Destination, "eventbridge:") && !isDetail(m.Body):
		return fmt.Errorf("an EventBridge event's Body, its detail, must be a JSON object without an %q field, which the relay adds", "idempotencyKey")
	case m.Body == "":
		return fmt.Errorf("empty Body")
	case len(m.Body) > MaxOutgoingBodyBytes:
		return fmt.Errorf("Body is %d bytes; the limit is %d", len(m.Body), MaxOutgoingBodyBytes)
	case !utf8.ValidString(m.Body) || !utf8.ValidString(m.Type) || !utf8.ValidString(m.GroupID):
		return fmt.Errorf("Body, Type or GroupID is not valid UTF-8")
	case len(m.Attributes) > 8:
		return fmt.Errorf("%d Attributes; SQS takes 10 a message, two of them the relay's IdempotencyKey and Type", len(m.Attributes))
	}
	for k, v := range m.Attributes {
		for _, r := range reservedAttributes {
			if strings.EqualFold(k, r) {
				return fmt.Errorf("attribute %q is the relay's own", k)
			}
		}
		if k == "" || v == "" {
			return fmt.Errorf("attribute %q: SQS takes no empty name or value", k)
		}
	}
	return nil
}
