package idem

import (
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemkit/kit/idem/internal/wire"
)

// OutgoingMessage is a message to another service that an effect sends
// through the transactional outbox: it is written as an outbox item in the
// same transaction as the message's claim and the effect's writes, so it
// exists exactly when the effect was applied, and a relay on the outbox's
// stream delivers it at least once. Its id names the claim that committed
// it (the table, the key, the claim's time) and its place in
// Effect.Messages: the relay sends it under that id every time, so the
// consumer at the other end deduplicates on it, and a message claimed
// again after its claim expired sends under new ids.
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
	// event's detail, which must then be a JSON object. Not empty, and of
	// the characters SQS takes; with its attributes, at most
	// MaxOutgoingBytes.
	Body string

	// Attributes are string message attributes (SQS), at most 8 besides
	// the IdempotencyKey and Type attributes the relay adds.
	Attributes map[string]string

	// GroupID is the message group on a FIFO queue. Defaults to the claim
	// key. The relay does not promise order, even within a group: each
	// outbox item is its own stream item, ordered only against itself,
	// and a batch's failed entry is sent again after the ones behind it.
	// Give a consumer that needs order a sequence in the body.
	GroupID string
}

// MaxOutgoingBytes bounds an OutgoingMessage as SQS counts a message: its
// Body with every attribute's name, type and value, the relay's
// IdempotencyKey and Type included; 256 KiB, also an EventBridge entry's
// limit.
const MaxOutgoingBytes = 256 << 10

// outboxKey is an outbox item's partition key value. A claim key is
// KeyPrefix + scope + "#" + id with a scope that is never empty, so no
// claim key of this Store starts with KeyPrefix + "#"; and the item's Put
// is conditional, so that a key another Store's claim holds (Stores that
// share a table without distinct prefixes) fails the transaction instead
// of overwriting the claim.
func (s *Store) outboxKey(id string) string {
	return s.opts.KeyPrefix + "#outbox#" + id
}

// addOutbox appends eff.Messages to eff.Writes as outbox items of the
// claim rec (its key and generation name them), written at now, after the handler's own
// writes (so a RejectedError's index still names one of those), and
// clears eff.Messages. A rejection recorded in the effect's place commits
// none of them.
func (s *Store) addOutbox(rec Record, eff *Effect, now time.Time) error {
	if len(eff.Messages) == 0 {
		return nil
	}
	a := s.opts.Attributes
	// Appended to a slice of the effect's own: the handler's Writes may
	// share their array with other effects.
	eff.Writes = slices.Clip(eff.Writes)
	expires := strconv.FormatInt(now.Add(s.opts.OutboxRetention).Unix(), 10)
	created := now.UTC().Format(time.RFC3339Nano)
	for i, m := range eff.Messages {
		if err := checkOutgoing(m); err != nil {
			return &InvalidError{Key: rec.Key, Reason: fmt.Sprintf("outgoing message %d: %v", i, err)}
		}
		id := wire.ID(s.table, rec.Key, rec.ClaimedAt, i)
		item := s.keyItem(s.outboxKey(id))
		str := func(name, v string) { item[name] = &types.AttributeValueMemberS{Value: v} }
		str(wire.KindAttr, wire.Kind)
		str(wire.IDAttr, id)
		str(wire.DestinationAttr, m.Destination)
		str(wire.BodyAttr, m.Body)
		str(wire.ClaimAttr, rec.Key)
		str(wire.CreatedAtAttr, created)
		group := m.GroupID
		if group == "" {
			group = rec.Key
		}
		str(wire.GroupAttr, group)
		if m.Type != "" {
			str(wire.TypeAttr, m.Type)
		}
		if len(m.Attributes) > 0 {
			attrs := make(map[string]types.AttributeValue, len(m.Attributes))
			for k, v := range m.Attributes {
				attrs[k] = &types.AttributeValueMemberS{Value: v}
			}
			item[wire.AttributesAttr] = &types.AttributeValueMemberM{Value: attrs}
		}
		item[wire.IndexAttr] = &types.AttributeValueMemberN{Value: strconv.Itoa(i)}
		if rec.traceparent != "" { // for the relay to send on: the message's trace is the delivery's
			str(wire.TraceParentAttr, rec.traceparent)
		}
		item[a.ExpiresAt] = &types.AttributeValueMemberN{Value: expires}
		// The id is new with each claim, so the item is too: a key held
		// already is another Store's (see outboxKey), never overwritten.
		eff.Writes = append(eff.Writes, types.TransactWriteItem{Put: &types.Put{
			TableName: &s.opts.OutboxTable, Item: item,
			ConditionExpression:      aws.String("attribute_not_exists(#k)"),
			ExpressionAttributeNames: map[string]string{"#k": a.Key},
		}})
	}
	eff.Messages = nil
	return nil
}

// outboxID is the id of the outbox item w puts, or "" when w is none.
func outboxID(w types.TransactWriteItem) string {
	if w.Put == nil {
		return ""
	}
	kind, _ := w.Put.Item[wire.KindAttr].(*types.AttributeValueMemberS)
	id, _ := w.Put.Item[wire.IDAttr].(*types.AttributeValueMemberS)
	if kind == nil || kind.Value != wire.Kind || id == nil {
		return ""
	}
	return id.Value
}

// isOutboxItem says whether a stored item is an outbox item.
func isOutboxItem(item map[string]types.AttributeValue) bool {
	kind, _ := item[wire.KindAttr].(*types.AttributeValueMemberS)
	return kind != nil && kind.Value == wire.Kind
}

// reservedAttributes are the SQS message attributes the relay sets.
var reservedAttributes = []string{"IdempotencyKey", "Type"}

// checkOutgoing refuses, before anything commits, a message its
// destination would refuse: once committed, such a message would fail the
// relay on every retry and end at its on-failure destination, unsent.
func checkOutgoing(m OutgoingMessage) error {
	if err := checkDestination(m); err != nil {
		return err
	}
	switch {
	case m.Body == "":
		return errors.New("empty Body")
	case !sqsText(m.Body):
		return errors.New("the Body is not valid UTF-8 or holds a character SQS refuses (a control character other than tab, LF and CR, or U+FFFE/U+FFFF)")
	case !sqsText(m.Type) || !utf8.ValidString(m.GroupID):
		return errors.New("the Type or GroupID is not valid UTF-8, or Type holds a character SQS refuses")
	case len(m.Attributes) > 8:
		return fmt.Errorf("%d Attributes; SQS takes 10 a message, two of them the relay's IdempotencyKey and Type", len(m.Attributes))
	}
	// As SQS counts a message's size: its body, and each attribute's name,
	// type ("String") and value, the relay's two included.
	size := len(m.Body) + len("IdempotencyKey") + 32 + len("Type") + len(m.Type) + 2*len("String")
	for k, v := range m.Attributes {
		if err := checkAttributeName(k); err != nil {
			return err
		}
		if v == "" || !sqsText(v) {
			return fmt.Errorf("attribute %q: its value is empty, not valid UTF-8, or holds a character SQS refuses", k)
		}
		size += len(k) + len("String") + len(v)
	}
	if size > MaxOutgoingBytes {
		return fmt.Errorf("the message is %d bytes with its attributes; the limit is %d", size, MaxOutgoingBytes)
	}
	return nil
}

func checkDestination(m OutgoingMessage) error {
	if bus, ok := strings.CutPrefix(m.Destination, "eventbridge:"); ok {
		switch {
		case bus == "":
			return fmt.Errorf("the Destination %q names no event bus", m.Destination)
		case m.Type == "":
			return errors.New("an EventBridge event needs a Type, its detail-type")
		}
		if err := wire.CheckDetail(m.Body); err != nil {
			return fmt.Errorf("an EventBridge event's Body is its detail, and %v", err)
		}
		return nil
	}
	u, err := url.Parse(m.Destination)
	if m.Destination == "" {
		return errors.New("no Destination")
	}
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || len(strings.Split(strings.Trim(u.Path, "/"), "/")) != 2 || strings.Contains(strings.Trim(u.Path, "/"), "//") {
		return fmt.Errorf("the Destination %q is neither an SQS queue URL (https://sqs.<region>.amazonaws.com/<account>/<queue>) nor \"eventbridge:\" and a bus", m.Destination)
	}
	return nil
}

// checkAttributeName applies SQS's rules for a message attribute's name.
func checkAttributeName(k string) error {
	for _, r := range reservedAttributes {
		if strings.EqualFold(k, r) {
			return fmt.Errorf("attribute %q is the relay's own", k)
		}
	}
	ok := k != "" && len(k) <= 256 && !strings.HasPrefix(k, ".") && !strings.HasSuffix(k, ".") && !strings.Contains(k, "..")
	lower := strings.ToLower(k)
	ok = ok && !strings.HasPrefix(lower, "aws.") && !strings.HasPrefix(lower, "amazon.")
	for i := 0; ok && i < len(k); i++ {
		c := k[i]
		ok = c == '_' || c == '-' || c == '.' || ('0' <= c && c <= '9') || ('a' <= c && c <= 'z') || ('A' <= c && c <= 'Z')
	}
	if !ok {
		return fmt.Errorf("attribute name %q: SQS takes 1 to 256 of A-Z a-z 0-9 _ - . (no leading, trailing or doubled period, no AWS. or Amazon. prefix)", k)
	}
	return nil
}

// sqsText says whether SQS takes s in a body or an attribute value: valid
// UTF-8 of #x9, #xA, #xD, #x20-#xD7FF, #xE000-#xFFFD and #x10000-#x10FFFF.
func sqsText(s string) bool {
	if !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		if r < 0x20 && r != '\t' && r != '\n' && r != '\r' || r == 0xFFFE || r == 0xFFFF {
			return false
		}
	}
	return true
}
