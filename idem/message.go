package idem

import (
	"context"
	"log/slog"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// Message is one delivery of a message.
type Message struct {
	// ID is the dedupe key: an id the sender keeps stable across retries,
	// such as a provider's event id or an Idempotency-Key header. Each
	// adapter documents which id it uses.
	ID string
	// Source names the sender, for per-sender metrics and, by default, the
	// scope of its ids.
	Source string
	// Payload is the raw message.
	Payload []byte
	// Fingerprint identifies the payload: a delivery whose id was claimed
	// with another fingerprint is a *KeyReuseError. Defaults to
	// Fingerprint(Payload), the SHA-256 of the bytes, right for ids the
	// client chose (an Idempotency-Key). For ids a provider assigns to an
	// event it may render afresh on each attempt (Stripe's evt_…), set the
	// event's stable identity: a redelivery whose bytes changed is then
	// still a Duplicate, logged with both payload digests.
	Fingerprint string
	// Replay, when set, reads the stored record of a Duplicate before its
	// outcome is logged and counted, such as an adapter decoding the
	// response it replays. An error (or a panic) makes the delivery a
	// *ReplayError, counted once, as Failed.
	Replay func(stored Record) error
	// LogAttrs are added to the message's log record, such as the SQS
	// messageId that a batch response names.
	LogAttrs []slog.Attr
}

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
	// ever. When nil, the rejection is returned as a *RejectedError and
	// nothing is recorded.
	Rejected func(*RejectedError) []byte
}

// Handler reads a message and describes its effect. It must not write to
// DynamoDB itself; a returned error or a panic commits nothing.
type Handler func(ctx context.Context, msg Message) (Effect, error)

// Outcome is what became of a delivery.
type Outcome string

// Outcomes, also the names of the metrics.
const (
	// Processed: the claim and the effect committed.
	Processed Outcome = "Processed"
	// Duplicate: the id was claimed before; nothing applied.
	Duplicate Outcome = "Duplicate"
	// Rejected: a condition of the effect failed and the rejection was
	// recorded as the message's outcome.
	Rejected Outcome = "Rejected"
	// KeyReuse: the id was claimed before for another payload.
	KeyReuse Outcome = "KeyReuse"
	// Failed: nothing committed; the delivery should be retried.
	Failed Outcome = "Failed"
	// Refused: the delivery was turned away before its claim, as a
	// webhook without a valid signature is: the sender's fault, not a
	// failure of the consumer, so it is counted apart from Failed.
	Refused Outcome = "Refused"
	// InFlight: another delivery of the message holds its lease
	// (ProcessLeased); nothing was done, and the delivery is to be retried
	// after the lease (*LeaseHeldError). Counted apart from Failed: it is
	// a race the lease won, not a fault.
	InFlight Outcome = "InFlight"
	// Fenced: a delivery under a lease lost it before its commit, which
	// then applied nothing (*FencedError): another delivery took the claim
	// over after the lease ended.
	Fenced Outcome = "Fenced"

	// Pending is a claim record's outcome while a lease holds it; never a
	// delivery's.
	Pending Outcome = "Pending"
)

// Result is a successful delivery's outcome.
type Result struct {
	// Outcome is Processed, Duplicate or Rejected.
	Outcome Outcome
	// Record is the claim record: the one just written, or, for a
	// Duplicate, the stored one whose Response is to be replayed.
	Record Record
	// Rejection is the failed condition, when Outcome is Rejected.
	Rejection *RejectedError
	// PayloadChanged reports a Duplicate whose payload's bytes differ from
	// the first delivery's, as they may only when Message.Fingerprint is
	// set.
	PayloadChanged bool
	// Cached reports a Duplicate answered from the Store's cache
	// (Options.CacheSize), without a call.
	Cached bool
}

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

	lease string // a Pending claim's lease id
}

type ctxKey struct{}

type delivery struct {
	msg Message
	key string
}

func withDelivery(ctx context.Context, msg Message, key string) context.Context {
	return context.WithValue(ctx, ctxKey{}, delivery{msg, key})
}

// FromContext returns the message a Handler's context carries.
func FromContext(ctx context.Context) (Message, bool) {
	d, ok := ctx.Value(ctxKey{}).(delivery)
	return d.msg, ok
}

// KeyFromContext returns the claim key of the message a Handler's context
// carries: stable across redeliveries, unique per scope and id. A handler
// that calls another service before the commit should run under a lease
// (ProcessLeased) and forward LeaseFromContext's Key, the same key: without
// a lease two deliveries may call at once.
func KeyFromContext(ctx context.Context) (string, bool) {
	d, ok := ctx.Value(ctxKey{}).(delivery)
	return d.key, ok
}
