package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-lambda-go/events"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/idemkit/kit/idem"
	"github.com/idemkit/kit/idem/sqsconsumer"
)

// What a dead-lettered message is, against its claim.
const (
	classApplied = "applied"       // a final claim of the same payload: safe to delete
	classNever   = "never-applied" // no claim, or an expired one of another payload: redrive
	classReused  = "key-reused"    // a claim of another payload under its key: for a human
	classPending = "pending"       // a lease holds its claim, or held it and ended
	classNoKey   = "unreadable"    // no key, or one that cannot be a claim key
)

// dlqMessage is one message read from the DLQ, classified.
type dlqMessage struct {
	msg     sqstypes.Message
	rec     events.SQSMessage
	deleted bool

	MessageID    string     `json:"messageId"`
	ReceiveCount int        `json:"receiveCount"`
	SentAt       time.Time  `json:"sentAt,omitzero"`
	Group        string     `json:"groupId,omitempty"`
	DedupID      string     `json:"deduplicationId,omitempty"`
	Key          string     `json:"key,omitempty"`      // the idempotency key the consumer reads
	ClaimKey     string     `json:"claimKey,omitempty"` // the claim it makes
	BodySHA256   string     `json:"bodySha256"`
	Class        string     `json:"class"`
	Detail       string     `json:"detail"`
	Claim        *claimView `json:"claim,omitempty"`
	Action       string     `json:"action,omitempty"` // what this run did: redriven, deleted, or why not
}

// classify keys m as the consumer does (fn, the Source source) and reads
// its claim. Only an error reading the table stops the run.
func (e *env) classify(ctx context.Context, m *dlqMessage, fn sqsconsumer.KeyFunc, source string, now time.Time) error {
	body := []byte(m.rec.Body)
	m.BodySHA256 = idem.Fingerprint(body)
	key, err := fn(m.rec)
	switch {
	case err != nil:
		m.Class, m.Detail = classNoKey, "its key cannot be read: "+err.Error()
		return nil
	case key == "":
		m.Class, m.Detail = classNoKey, "it has no key of the kind -key-func reads: "+sqsconsumer.ErrNoKey.Error()
		return nil
	}
	m.Key = key
	m.ClaimKey = e.claims.key(idem.Message{ID: key, Source: source, Payload: body})
	cl, err := e.claims.get(ctx, m.ClaimKey)
	switch {
	case errors.Is(err, errOutboxItem):
		m.Class, m.Detail = classNoKey, err.Error()
		return nil
	case isCode(err, "ValidationException"):
		m.Class, m.Detail = classNoKey, "DynamoDB takes no such claim key: "+err.Error()
		return nil
	case err != nil:
		return err
	case cl == nil:
		m.Class, m.Detail = classNever, "no claim: the consumer never committed it"
		return nil
	}
	v := view(cl, now, false)
	m.Claim = &v
	// The Store's own test (idem's sameMessage): the same fingerprint, or
	// the same bytes; an SQS message's fingerprint is its body's SHA-256.
	same := cl.Fingerprint == m.BodySHA256 || cl.PayloadDigest == m.BodySHA256
	final := cl.Outcome == idem.Processed || cl.Outcome == idem.Rejected
	switch {
	case v.Expired && !(same && final):
		m.Class, m.Detail = classNever, fmt.Sprintf("its claim expired at %s: the kit takes it as absent", v.ExpiresAt.Format(time.RFC3339))
	case !same:
		m.Class, m.Detail = classReused, fmt.Sprintf("the claim under its key (%s at %s) holds another payload (fingerprint %.12s…, this body's %.12s…): the consumer refused it as key reuse", cl.Outcome, v.ClaimedAt.Format(time.RFC3339), cl.Fingerprint, m.BodySHA256)
	case cl.Outcome == idem.Pending && v.Lease.Live:
		m.Class, m.Detail = classPending, fmt.Sprintf("a delivery holds its lease until %s", when(v.Lease.Until, now))
	case cl.Outcome == idem.Pending:
		m.Class, m.Detail = classPending, "its lease ended without a commit (the handler failed or timed out, maybe after calling out): see the runbook, a claim stuck pending"
	case !final:
		m.Class, m.Detail = classNoKey, fmt.Sprintf("its claim's outcome is %q, which this kit never writes", cl.Outcome)
	case v.Expired:
		// Applied once, longer ago than the retention: the kit would take
		// the claim as absent and apply it again, which a redrive must not.
		m.Class, m.Detail = classApplied, fmt.Sprintf("%s at %s; the claim expired at %s, so a redrive would apply it again", cl.Outcome, v.ClaimedAt.Format(time.RFC3339), v.ExpiresAt.Format(time.RFC3339))
	default:
		m.Class, m.Detail = classApplied, fmt.Sprintf("%s at %s, the same payload", cl.Outcome, v.ClaimedAt.Format(time.RFC3339))
	}
	return nil
}
