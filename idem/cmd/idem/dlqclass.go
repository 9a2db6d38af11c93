package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/aws/aws-lambda-go/events"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/idemkit/kit/idem"
	"github.com/idemkit/kit/idem/sqsconsumer"
)

// What a dead-lettered message is, against its claim.
const (
	classApplied     = "applied"       // a final claim of the same payload: safe to delete
	classNever       = "never-applied" // no claim, an expired one of another payload, or a lease's that ended uncommitted: redrive
	classSent        = "copy-sent"     // never applied, and an earlier run sent its copy: delete
	classUndecodable = "undecodable"   // never applied, and its body is not what the consumer decodes
	classReused      = "key-reused"    // a claim of another payload under its key: for a human
	classPending     = "pending"       // a lease holds its claim, or its claim is too old for a new lease
	classNoKey       = "unreadable"    // no key, or one that cannot be a claim key
	classNoSource    = "no-source"     // its source queue is unknown: refused
)

// dlqMessage is one message read from the DLQ, classified.
type dlqMessage struct {
	msg     sqstypes.Message
	rec     events.SQSMessage
	route   *route
	deleted bool
	undone  bool      // act was asked to send or delete it, and did not
	leaseTo time.Time // the end of the live lease that holds its claim

	MessageID    string     `json:"messageId"`
	ReceiveCount int        `json:"receiveCount"`
	SentAt       time.Time  `json:"sentAt,omitzero"`
	Group        string     `json:"groupId,omitempty"`
	DedupID      string     `json:"deduplicationId,omitempty"`
	SourceQueue  string     `json:"sourceQueue,omitempty"` // the queue it came from, where a redrive sends it
	Source       string     `json:"source,omitempty"`      // the claims' Source its consumer gives it
	Key          string     `json:"key,omitempty"`         // the idempotency key the consumer reads
	ClaimKey     string     `json:"claimKey,omitempty"`    // the claim it makes
	BodySHA256   string     `json:"bodySha256"`
	Class        string     `json:"class"`
	Detail       string     `json:"detail"`
	Claim        *claimView `json:"claim,omitempty"`
	Redrive      *marker    `json:"redrive,omitempty"` // an earlier run's redrive of it
	Action       string     `json:"action,omitempty"`  // what this run did: redriven, deleted, or why not
}

// classify keys m as the consumer does (fn, the Source of its route) and
// reads its claim and any earlier run's redrive of it. Only an error
// reading the table stops the run.
func (e *env) classify(ctx context.Context, m *dlqMessage, fn sqsconsumer.KeyFunc, o dlqOptions, now time.Time) error {
	anyBody := o.body == "any"
	body := []byte(m.rec.Body)
	m.BodySHA256 = idem.Fingerprint(body)
	if q := m.route.q; q != nil {
		m.SourceQueue = q.name
		m.rec.EventSourceARN = q.arn
	}
	m.Source = m.route.source
	if m.Source == "" {
		m.Key, _ = fn(m.rec) // shown; its claim depends on the Source
		m.Class, m.Detail = classNoSource, m.route.why
		return nil
	}
	if err := e.claims.checkSource(m.Source); err != nil {
		m.Class, m.Detail = classNoKey, "the claims' Source: "+err.Error()
		return nil
	}
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
	m.ClaimKey = e.claims.key(idem.Message{ID: key, Source: m.Source, Payload: body})
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
		return e.never(ctx, m, anyBody, now)
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
		return e.never(ctx, m, anyBody, now)
	case !same:
		m.Class, m.Detail = classReused, fmt.Sprintf("the claim under its key (%s at %s) holds another payload (fingerprint %.12s…, this body's %.12s…): the consumer refused it as key reuse", cl.Outcome, v.ClaimedAt.Format(time.RFC3339), cl.Fingerprint, m.BodySHA256)
	case cl.Outcome == idem.Pending:
		return e.pending(ctx, m, cl, o, now)
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

// takeoverSkew is how long after a lease's end the Store takes it over
// (idem's own, for clocks that differ): a lease is live here until then.
const takeoverSkew = time.Second

// pending classes a message whose claim of the same payload is Pending: a
// lease-mode delivery's claim, which commits nothing until its handler
// succeeds. A lease released (the handler failed) or ended (it timed out,
// its environment died) left it uncommitted: never applied, and the
// consumer's next delivery takes the claim over (idem.Store.ProcessLeased
// takes over a lease that ended, Process commits over it). A live lease
// is a delivery running the handler now; a claim made longer ago than the
// consumer's LeaseOptions.KeyLifetime gets no new lease (StaleLeaseError):
// both stay pending.
func (e *env) pending(ctx context.Context, m *dlqMessage, cl *claim, o dlqOptions, now time.Time) error {
	switch {
	case !cl.LeaseUntil.IsZero() && now.Before(cl.LeaseUntil.Add(takeoverSkew)):
		m.Class, m.Detail = classPending, fmt.Sprintf("a delivery holds its lease until %s: it may be running the handler now", when(cl.LeaseUntil, now))
		m.leaseTo = cl.LeaseUntil
		return nil
	case now.Sub(cl.ClaimedAt) > o.keyLifetime:
		m.Class, m.Detail = classPending, fmt.Sprintf("its lease ended without a commit, and it was first claimed at %s, longer ago than -key-lifetime (%v, the consumer's LeaseOptions.KeyLifetime): a leased consumer refuses it a new lease (StaleLeaseError), since the services it calls may have forgotten the key: see the runbook, a claim stuck pending", cl.ClaimedAt.UTC().Format(time.RFC3339), o.keyLifetime)
		return nil
	case cl.LeaseUntil.IsZero():
		m.Class, m.Detail = classNever, "its claim is pending and committed nothing: the lease was released by a handler that failed"
	default:
		m.Class, m.Detail = classNever, fmt.Sprintf("its claim is pending and committed nothing: the lease ran out at %s (a timeout, or an environment that died)", cl.LeaseUntil.UTC().Format(time.RFC3339))
	}
	m.Detail += "; the consumer's next delivery takes the claim over, calling out again with the same key"
	return e.never(ctx, m, o.body == "any", now)
}

// never refines a never-applied message: a copy an earlier run sent
// (copy-sent), or a body the consumer's decoder refuses (undecodable).
func (e *env) never(ctx context.Context, m *dlqMessage, anyBody bool, now time.Time) error {
	mk, err := e.claims.getMarker(ctx, m.MessageID)
	if err != nil {
		return err
	}
	m.Redrive = mk
	switch {
	case mk != nil && mk.State == markerSent:
		m.Class, m.Detail = classSent, fmt.Sprintf("an earlier run sent its copy %s to %s at %s and could not delete it here: it is not sent again; the copy is keyed as it is", mk.Copy, mk.Queue[strings.LastIndexByte(mk.Queue, '/')+1:], mk.At.Format(time.RFC3339))
		return nil
	case mk != nil:
		m.Detail += fmt.Sprintf("; an earlier run began sending its copy at %s and did not learn whether it went: a second copy is keyed as the first, and the consumer applies one", mk.At.Format(time.RFC3339))
	}
	if why := undecodable(m.rec.Body); why != "" && !anyBody {
		m.Class, m.Detail = classUndecodable, why+": the consumer's decoder (-body json) refuses it, and a redrive would fail again"
	}
	return nil
}

// undecodable says why sqsconsumer.JSONHandler cannot decode body, as its
// decoder says it; "" when it can (into some type: whether into the
// consumer's is its own rule).
func undecodable(body string) string {
	switch {
	case !utf8.ValidString(body):
		return "the body is not valid UTF-8"
	case !json.Valid([]byte(body)):
		return "the body is not one JSON value"
	}
	return ""
}
