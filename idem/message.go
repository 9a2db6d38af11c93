package idem

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/aws/aws-lambda-go/lambdacontext"
)

// Message is one delivery of a message.
type Message struct {
	// ID is the dedupe key: an id the sender keeps stable across retries,
	// such as a provider's event id or an Idempotency-Key header. Each
	// adapter documents which id it uses. An id that is empty or only
	// white space is refused (an *InvalidError).
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
	// response it replays. An error makes the delivery a *ReplayError (a
	// panic, a *PanicError), counted once, as Failed.
	Replay func(stored Record) error
	// LogAttrs are added to the message's log record, such as the SQS
	// messageId that a batch response names.
	LogAttrs []slog.Attr
	// Attempt is the sender's count of this delivery, 1 for its first,
	// when the sender keeps one (the SQS adapter sets SQS's
	// ApproximateReceiveCount); 0 when it does not. A Store keeps apart
	// the shares of duplicates among a sender's first attempts and among
	// its later ones (Options.ReadFirstAbove), so that in a redelivery
	// storm the redeliveries read their claim first and the first
	// deliveries go straight to their transaction.
	Attempt int
	// Tenant is the tenant whose message this is. A Store scopes claims
	// by it (unless Options.SharedAcrossTenants), so two tenants' senders
	// may use the same ids and one tenant's redelivery is never answered
	// from another's claim; logs and metrics carry it. 1 to 256 of the
	// characters Lambda takes in a tenant id (letters, digits and
	// . _ : / = + - @ and space). Defaults to the invoke's tenant id when
	// the function runs in Lambda's tenant isolation mode
	// (lambdacontext.LambdaContext.TenantID), else none.
	Tenant string
}

// messageKey carries the Message a Handler runs for.
type messageKey struct{}

func withMessage(ctx context.Context, msg Message) context.Context {
	return context.WithValue(ctx, messageKey{}, msg)
}

// FromContext returns the message a Handler's context carries.
func FromContext(ctx context.Context) (Message, bool) {
	msg, ok := ctx.Value(messageKey{}).(Message)
	return msg, ok
}

// withTenant is msg with its Tenant, when it names none, taken from the
// invoke's context: Lambda's tenant isolation mode hands each invoke its
// tenant id.
func withTenant(ctx context.Context, msg Message) Message {
	if msg.Tenant == "" {
		if lc, ok := lambdacontext.FromContext(ctx); ok {
			msg.Tenant = lc.TenantID
		}
	}
	return msg
}

// maxTenantBytes is Lambda's limit on a tenant id (API reference, Invoke:
// X-Amz-Tenant-Id).
const maxTenantBytes = 256

// checkTenant accepts what Lambda takes as a tenant id: 1 to 256 of
// [a-zA-Z0-9._:/=+-@ ], none of which is the "#" that ends the tenant in a
// claim key.
func checkTenant(t string) error {
	if len(t) > maxTenantBytes {
		return fmt.Errorf("tenant is %d bytes; Lambda allows %d", len(t), maxTenantBytes)
	}
	for i := 0; i < len(t); i++ {
		c := t[i]
		ok := 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '.' || c == '_' || c == ':' ||
			c == '/' || c == '=' || c == '+' || c == '-' || c == '@' || c == ' '
		if !ok {
			return fmt.Errorf("tenant %q has %q at byte %d; a tenant id takes letters, digits and . _ : / = + - @ and space", t, c, i)
		}
	}
	return nil
}
