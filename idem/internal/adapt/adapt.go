// Package adapt is how idem's adapters (idem/sqsconsumer, idem/webhook,
// idem/stream) and commands enter a Store: one step when an adapter is
// built (Open) gives a Door that processes, reports and recovers as the
// Store does, with what the Store keeps from its users.
package adapt

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemkit/kit/idem"
	"github.com/idemkit/kit/idem/internal/hook"
)

// hooks is what idem sets in hook.Idem.
type hooks interface {
	CheckSource(s *idem.Store, source string) error
	CheckLease(s *idem.Store, o idem.LeaseOptions) error
	Report(ctx context.Context, s *idem.Store, o idem.Outcome, msg idem.Message, err error)
	Now(s *idem.Store) time.Time
	ClaimKey(s *idem.Store, msg idem.Message) string
	Decode(s *idem.Store, item map[string]types.AttributeValue) idem.Record
	OutboxKey(s *idem.Store, id string) string
	Tracing(ctx context.Context, s *idem.Store) bool
}

func kit() hooks { return hook.Idem.(hooks) }

// Door is a Store as one adapter opened it.
type Door struct {
	Store  *idem.Store
	lease  *idem.LeaseOptions
	source string
}

// Open checks, once, what an adapter will use a Store with: a Source it
// can take (none: the adapter names each message's), and lease options
// it can honour (nil: no lease). what names the adapter's option in an
// error, such as "sqsconsumer.Options".
func Open(store *idem.Store, what, source string, lease *idem.LeaseOptions) (*Door, error) {
	if store == nil {
		return nil, errors.New("nil Store")
	}
	if source != "" {
		if err := kit().CheckSource(store, source); err != nil {
			return nil, fmt.Errorf("%s.Source: %w", what, err)
		}
	}
	if lease != nil {
		if err := kit().CheckLease(store, *lease); err != nil {
			return nil, fmt.Errorf("%s.Lease: %w", what, err)
		}
		l := *lease // the adapter's options may change after it was built
		lease = &l
	}
	return &Door{Store: store, lease: lease, source: source}, nil
}

// Process is Store.Process, or Store.ProcessLeased under the Door's lease.
func (d *Door) Process(ctx context.Context, msg idem.Message, h idem.Handler) (idem.Result, error) {
	if d.lease == nil {
		return d.Store.Process(ctx, msg, h)
	}
	return d.Store.ProcessLeased(ctx, msg, h, func(o *idem.LeaseOptions) { *o = *d.lease })
}

// Leased says whether the Door processes under a lease.
func (d *Door) Leased() bool { return d.lease != nil }

// Fail logs and counts, as Failed, a delivery that failed before it could
// be processed, such as a queue message whose key could not be read.
func (d *Door) Fail(ctx context.Context, msg idem.Message, err error) {
	kit().Report(ctx, d.Store, idem.Failed, msg, err)
}

// Refuse logs and counts, as Refused, a delivery turned away before its
// claim for its sender's fault, such as a webhook with a bad signature.
func (d *Door) Refuse(ctx context.Context, msg idem.Message, err error) {
	kit().Report(ctx, d.Store, idem.Refused, msg, err)
}

// CheckSource says why source cannot be a message's Source on the Store.
func (d *Door) CheckSource(source string) error { return kit().CheckSource(d.Store, source) }

// Tracing reports whether a delivery given ctx is traced (the rule on
// idem.Options.TracerProvider): only then is its span worth naming
// (hook.WithSpan).
func (d *Door) Tracing(ctx context.Context) bool { return kit().Tracing(ctx, d.Store) }

// Now is the Store's clock.
func (d *Door) Now() time.Time { return kit().Now(d.Store) }

// Recover runs fn and turns a panic in it into an *idem.PanicError naming
// callback: every callback an adapter calls fails one delivery, never the
// process.
func Recover(key, callback string, fn func() error) (err error) {
	// Here, not through the hooks: a call through an interface would make
	// every callback's closure, and what it captures, escape to the heap.
	defer func() {
		if v := recover(); v != nil {
			err = &idem.PanicError{Key: key, Callback: callback, Value: v, Stack: debug.Stack()}
		}
	}()
	return fn()
}

// Panic is err's *idem.PanicError, or nil; it allocates nothing when err
// is nil.
func Panic(err error) *idem.PanicError {
	if err == nil {
		return nil
	}
	var pe *idem.PanicError
	if errors.As(err, &pe) {
		return pe
	}
	return nil
}

// ClaimKey is the claim key the Store gives msg, for commands that look a
// message's claim up as the adapters would have written it.
func ClaimKey(s *idem.Store, msg idem.Message) string { return kit().ClaimKey(s, msg) }

// Decode reads a stored claim record, as the Store does.
func Decode(s *idem.Store, item map[string]types.AttributeValue) idem.Record {
	return kit().Decode(s, item)
}

// OutboxKey is the partition key value of the outbox item whose id is id
// (wire.ID), for commands that look up the messages a claim sent.
func OutboxKey(s *idem.Store, id string) string { return kit().OutboxKey(s, id) }
