package idem

import (
	"context"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// The effect a handler describes: its writes, its outgoing messages (the
// transactional outbox's items, outbox.go) and its response; checked
// against what DynamoDB allows before anything is sent (limits.go), then
// committed with its claim (commit.go).

// Effect describes what a message does, as DynamoDB writes the kit commits
// together with the message's claim.
type Effect struct {
	// Writes are the business writes (Put, Update, Delete, ConditionCheck),
	// at most 99, none on the same item as another.
	Writes []types.TransactWriteItem

	// Messages are sent to other services through the transactional
	// outbox: each is written as an item of Options.OutboxTable in the
	// same transaction, counted in its 100 actions and 4 MB, and relayed
	// from the table's stream at least once, under an id that names the
	// committed claim (its table, key and time) and the message's index,
	// the same on every send. A Duplicate or a recorded rejection sends
	// none.
	Messages []OutgoingMessage

	// Response is stored with the claim and returned to every duplicate
	// delivery, at most Options.MaxResponseBytes.
	Response []byte

	// Rejected, when set, makes a failed condition of one of Writes the
	// message's recorded outcome: the response it returns is stored with a
	// claim and no effect, so redeliveries replay it instead of retrying for
	// ever. An error it returns fails the delivery (a *HandlerError),
	// nothing recorded. When nil, the rejection is returned as a
	// *RejectedError and nothing is recorded.
	Rejected func(*RejectedError) ([]byte, error)
}

// Handler reads a message and describes its effect. It must not write to
// DynamoDB itself; a returned error or a panic commits nothing.
type Handler func(ctx context.Context, msg Message) (Effect, error)

// DynamoDB's limits (developer guide, "Constraints" and "transaction-apis").
const (
	maxTransactItems     = 100
	maxTransactBytes     = 4 << 20
	maxItemBytes         = 400 << 10
	maxPartitionKeyBytes = 2048
	maxSortKeyBytes      = 1024
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
	// the characters SQS takes; with its attributes, at most 256 KiB as
	// SQS counts a message (every attribute's name, type and value, the
	// relay's IdempotencyKey and Type included), also an EventBridge
	// entry's limit.
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

// maxOutgoingBytes bounds an OutgoingMessage (its Body's doc).
const maxOutgoingBytes = 256 << 10

// prepare runs d's handler and checks the effect it describes, to commit
// with d's claim; false when there is nothing to commit, d's error set.
func (s *Store) prepare(d *delivery) bool {
	eff, err := runHandler(withMessage(d.ctx, d.msg), d.msg, d.key.name, d.h)
	if err == nil {
		now := s.opts.Now()
		d.claim = s.newClaim(d.key, now, traceContext(d.ctx))
		err = s.checkEffect(d, &eff, now)
	}
	if err != nil {
		d.err = err
		return false
	}
	d.claim.Outcome, d.claim.Response = Processed, eff.Response
	d.tx.writes, d.rejected = eff.Writes, eff.Rejected
	return true
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

// checkEffect makes eff's outgoing messages outbox items of d's claim,
// written at now, and refuses what DynamoDB or the relay would of it
// (validate), whose measure of the writes' size the commit keeps.
func (s *Store) checkEffect(d *delivery, eff *Effect, now time.Time) (err error) {
	own := len(eff.Writes)
	if err := s.addOutbox(d.claim, d.key.item, eff, now); err != nil {
		return err
	}
	d.tx.writesSize, err = s.validate(d.key, *eff, own)
	return err
}
