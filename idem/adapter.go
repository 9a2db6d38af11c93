package idem

import (
	"context"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemkit/kit/idem/internal/seam"
)

// Adapter is for the kit's own adapters and commands, which reach through
// it what a Store does for them and not for its users. Its argument's type
// is internal to the kit, so it cannot be called from outside the kit. Of
// a nil Store, only Recover may be used.
func (s *Store) Adapter(seam.Key) adapterSeam { return adapterSeam{s} }

// adapterSeam is a Store as the kit's adapters and commands use it.
type adapterSeam struct{ s *Store }

// CheckSource says why source cannot be a message's Source on the Store.
func (a adapterSeam) CheckSource(source string) error { return a.s.checkSource(source) }

// CheckTenant says why t cannot be a message's Tenant.
func (a adapterSeam) CheckTenant(t string) error { return checkTenant(t) }

// CheckLease says why the Store cannot run handlers under a lease with o.
func (a adapterSeam) CheckLease(o LeaseOptions) error { return a.s.checkLease(o) }

// Report logs and counts a delivery turned away before its claim: Failed
// (its key unreadable, say) or Refused (a bad signature).
func (a adapterSeam) Report(ctx context.Context, o Outcome, msg Message, err error) {
	a.s.report(ctx, o, msg, err)
}

// Now is the Store's clock.
func (a adapterSeam) Now() time.Time { return a.s.opts.Now() }

// Tracing reports whether a delivery given ctx is traced (the rule on
// Options.TracerProvider): only then is its span worth naming
// (seam.WithSpan).
func (a adapterSeam) Tracing(ctx context.Context) bool { return a.s.tracing(ctx) }

// Recover runs fn and turns a panic in it into a *PanicError naming
// callback, with its stack: every callback the kit calls fails one
// delivery, never the process. It reads nothing of the Store.
func (a adapterSeam) Recover(key, callback string, fn func() error) error {
	return recovered(key, callback, fn)
}

// ClaimKey is the claim key the Store gives msg, for commands that look a
// message's claim up as the adapters would have written it.
func (a adapterSeam) ClaimKey(msg Message) string { return a.s.claimKey(msg) }

// Decode reads a stored claim record, as the Store does.
func (a adapterSeam) Decode(item map[string]types.AttributeValue) Record {
	return a.s.decodeRecord(item)
}

// OutboxKey is the partition key value of the outbox item whose id is id
// (wire.ID), for commands that look up the messages a claim sent.
func (a adapterSeam) OutboxKey(id string) string { return a.s.outboxKey(id) }
