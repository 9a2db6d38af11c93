package idem

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemkit/kit/idem/internal/wire"
)

// An effect's outgoing messages are outbox items written in its
// transaction (Effect.Messages), for the relay on the table's stream
// (idem/outbox).

// outboxKey is an outbox item's partition key value. A claim key is
// KeyPrefix + scope + "#" + id with a scope that is never empty, so no
// claim key of this Store starts with KeyPrefix + "#"; and the item's Put
// is conditional, so that a key another Store's claim holds (Stores that
// share a table without distinct prefixes) fails the transaction instead
// of overwriting the claim.
func (s *Store) outboxKey(itemID string) string {
	return s.opts.KeyPrefix + "#outbox#" + itemID
}

// addOutbox appends eff.Messages to eff.Writes as outbox items of the
// claim rec, keyed by keyItem (its key and generation name them), written
// at now, after the handler's own writes (so a RejectedError's index still
// names one of those), and clears eff.Messages. A rejection recorded in
// the effect's place commits none of them.
func (s *Store) addOutbox(rec Record, keyItem map[string]types.AttributeValue, eff *Effect, now time.Time) error {
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
		if err := wire.CheckMessage(wire.Message{Destination: m.Destination, Type: m.Type, Body: m.Body, GroupID: m.GroupID, Attributes: m.Attributes}, maxOutgoingBytes); err != nil {
			return &InvalidError{Key: rec.Key, Reason: fmt.Sprintf("outgoing message %d: %v", i, err)}
		}
		itemID := wire.ID(s.table, rec.Key, rec.ClaimedAt, i)
		// The claim's key, its partition key value the item's own.
		item := maps.Clone(keyItem)
		item[a.Key] = &types.AttributeValueMemberS{Value: s.outboxKey(itemID)}
		str := func(name, v string) { item[name] = &types.AttributeValueMemberS{Value: v} }
		str(wire.KindAttr, wire.Kind)
		str(wire.IDAttr, itemID)
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
	idAttr, _ := w.Put.Item[wire.IDAttr].(*types.AttributeValueMemberS)
	if kind == nil || kind.Value != wire.Kind || idAttr == nil {
		return ""
	}
	return idAttr.Value
}

// isOutboxItem says whether a stored item is an outbox item.
func isOutboxItem(item map[string]types.AttributeValue) bool {
	kind, _ := item[wire.KindAttr].(*types.AttributeValueMemberS)
	return kind != nil && kind.Value == wire.Kind
}
