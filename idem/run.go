package idem

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemkit/kit/idem/internal/wire"
)

// A delivery run: its handler called, its outgoing messages made outbox
// items, the effect checked against what DynamoDB and the relay would
// refuse (check.go), then committed with its claim (transact.go).

// run runs h for msg, identified as id, and commits its effect with the
// claim.
func (s *Store) run(ctx context.Context, msg Message, id Record, h Handler) (Result, error) {
	rec, eff, err := s.prepare(ctx, msg, id, h)
	if err != nil {
		return Result{}, err
	}
	if err := s.checkTable(ctx, id.Key); err != nil {
		return Result{}, err
	}
	return s.commitEffect(ctx, rec, eff)
}

// prepare runs h for msg, identified as id, validates the effect it
// describes and builds the claim record to commit with it.
func (s *Store) prepare(ctx context.Context, msg Message, id Record, h Handler) (Record, Effect, error) {
	eff, err := runHandler(withDelivery(ctx, msg, id.Key), msg, id.Key, h)
	if err != nil {
		return Record{}, Effect{}, err
	}
	now := s.opts.Now()
	rec := id
	rec.ClaimedAt, rec.ExpiresAt, rec.traceparent = now, now.Add(s.opts.retention()), traceParent(ctx)
	if err := s.checkEffect(rec, &eff, now); err != nil {
		return Record{}, Effect{}, err
	}
	rec.Outcome, rec.Response = Processed, eff.Response
	return rec, eff, nil
}

// runHandler runs h, a panic in it a *PanicError.
func runHandler(ctx context.Context, msg Message, key string, h Handler) (Effect, error) {
	if h == nil {
		return Effect{}, &InvalidError{Key: key, Reason: "nil handler"}
	}
	var eff Effect
	var herr error
	if p := recoverPanic("the handler", func() { eff, herr = h(ctx, msg) }); p != nil {
		p.Key = key
		return Effect{}, p
	}
	if herr != nil {
		return Effect{}, &HandlerError{Key: key, Err: herr}
	}
	return eff, nil
}

// checkEffect makes eff's outgoing messages outbox items of the claim rec,
// written at now, and refuses what DynamoDB or the relay would of it
// (validateEffect).
func (s *Store) checkEffect(rec Record, eff *Effect, now time.Time) error {
	own := len(eff.Writes)
	if err := s.addOutbox(rec, eff, now); err != nil {
		return err
	}
	items, err := s.validateEffect(rec, *eff, own)
	eff.items = items
	return err
}

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
		if err := wire.CheckMessage(wire.Message{Destination: m.Destination, Type: m.Type, Body: m.Body, GroupID: m.GroupID, Attributes: m.Attributes}, maxOutgoingBytes); err != nil {
			return &InvalidError{Key: rec.Key, Reason: fmt.Sprintf("outgoing message %d: %v", i, err)}
		}
		id := wire.ID(s.table, rec.Key, rec.ClaimedAt, i)
		// The claim's key, its partition key value the item's own.
		item := maps.Clone(rec.keyItem)
		item[a.Key] = &types.AttributeValueMemberS{Value: s.outboxKey(id)}
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
