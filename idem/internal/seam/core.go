package seam

import (
	"context"
	"runtime/debug"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// Core is what the kit's packages reach of a Store beyond its public API,
// in the Store's own types: M is idem.Message, O idem.Outcome, R
// idem.Record and L idem.LeaseOptions (this package is beneath idem, which
// cannot be named here).
type Core[M, O, R, L any] struct {
	// CheckSource says why source cannot be a message's Source.
	CheckSource func(source string) error
	// CheckTenant says why t cannot be a message's Tenant.
	CheckTenant func(t string) error
	// CheckLease says why the Store cannot run handlers under a lease
	// with these options.
	CheckLease func(L) error
	// Report logs and counts a delivery turned away before its claim:
	// Failed (its key unreadable, say) or Refused (a bad signature).
	Report func(ctx context.Context, o O, msg M, err error)
	// Now is the Store's clock.
	Now func() time.Time
	// Tracing says whether a delivery given ctx is traced (the rule on
	// idem.Options.TracerProvider): only then is its span worth naming.
	Tracing func(ctx context.Context) bool
	// ClaimKey is the claim key the Store gives msg, for a command that
	// looks a message's claim up.
	ClaimKey func(msg M) string
	// Decode reads a stored claim record, as the Store does.
	Decode func(item map[string]types.AttributeValue) R
	// OutboxKey is the partition key value of the outbox item whose id is
	// id, for a command that looks up the messages a claim sent.
	OutboxKey func(id string) string
}

// Handle is embedded in idem.Store. Its one method, unexported, makes the
// Store an opener of its Core that only this package can call: Open.
type Handle[M, O, R, L any] struct{ core *Core[M, O, R, L] }

// NewHandle is the Handle of c.
func NewHandle[M, O, R, L any](c *Core[M, O, R, L]) Handle[M, O, R, L] {
	return Handle[M, O, R, L]{c}
}

func (h Handle[M, O, R, L]) seamCore() *Core[M, O, R, L] { return h.core }

// Opener is a Store: what embeds a Handle.
type Opener[M, O, R, L any] interface {
	seamCore() *Core[M, O, R, L]
}

// Open is the Core of s, a Store that is not nil.
func Open[M, O, R, L any](s Opener[M, O, R, L]) *Core[M, O, R, L] {
	return s.seamCore()
}

// Recover runs fn and says whether it panicked, with the panic's value and
// stack: every callback the kit calls fails one delivery, never the
// process. The Store and the adapters make their *idem.PanicError of it.
func Recover(fn func()) (value any, stack []byte, panicked bool) {
	defer func() {
		if v := recover(); v != nil {
			value, stack, panicked = v, debug.Stack(), true
		}
	}()
	fn()
	return nil, nil, false
}
