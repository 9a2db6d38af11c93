// Package adapt is how idem's adapters (idem/sqsconsumer,
// idem/kafkaconsumer, idem/webhook, idem/stream) enter a Store: one step
// when an adapter is built (New) gives a Processor that processes, reports
// and recovers as the Store does, through the Store's Core
// (idem/internal/seam). The batch adapters share the rest of their
// machinery here too, generic over their record type: a LaneRunner runs a
// batch's records in lanes, each stopped at its first failure, under their
// shared options (idem/batch), and JSONHandler is their JSONHandler.
package adapt

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/idemkit/kit/idem"
	"github.com/idemkit/kit/idem/internal/seam"
)

// Processor is a Store as one adapter uses it: it processes, reports and
// recovers deliveries as the Store does.
type Processor struct {
	Store  *idem.Store
	core   *seam.Core[idem.Message, idem.Outcome, idem.Record, idem.LeaseOptions]
	lease  *idem.LeaseOptions
	source string
}

// New checks, once, what an adapter will use a Store with: a Source it
// can take (none: the adapter names each message's), and lease options
// it can honour (nil: no lease). what names the adapter's option in an
// error, such as "sqsconsumer.Options".
func New(store *idem.Store, what, source string, lease *idem.LeaseOptions) (*Processor, error) {
	if store == nil {
		return nil, errors.New("nil Store")
	}
	core := Core(store)
	if source != "" {
		if err := core.CheckSource(source); err != nil {
			return nil, fmt.Errorf("%s.Source: %w", what, err)
		}
	}
	if lease != nil {
		if err := core.CheckLease(*lease); err != nil {
			return nil, fmt.Errorf("%s.Lease: %w", what, err)
		}
		l := *lease // the adapter's options may change after it was built
		lease = &l
	}
	return &Processor{Store: store, core: core, lease: lease, source: source}, nil
}

// Core is what the kit's packages reach of a Store beyond its public API
// (internal/seam), for a Store that is not nil.
func Core(store *idem.Store) *seam.Core[idem.Message, idem.Outcome, idem.Record, idem.LeaseOptions] {
	return seam.Open[idem.Message, idem.Outcome, idem.Record, idem.LeaseOptions](store)
}

// Process is Store.Process, or Store.ProcessLeased under the Processor's lease.
func (p *Processor) Process(ctx context.Context, msg idem.Message, h idem.Handler) (idem.Result, error) {
	if p.lease == nil {
		return p.Store.Process(ctx, msg, h)
	}
	return p.Store.ProcessLeased(ctx, msg, h, func(o *idem.LeaseOptions) { *o = *p.lease })
}

// Leased says whether the Processor processes under a lease.
func (p *Processor) Leased() bool { return p.lease != nil }

// Fail logs and counts, as Failed, a delivery that failed before it could
// be processed, such as a queue message whose key could not be read.
func (p *Processor) Fail(ctx context.Context, msg idem.Message, err error) {
	p.core.Report(ctx, idem.Failed, msg, err)
}

// Refuse logs and counts, as Refused, a delivery turned away before its
// claim for its sender's fault, such as a webhook with a bad signature.
func (p *Processor) Refuse(ctx context.Context, msg idem.Message, err error) {
	p.core.Report(ctx, idem.Refused, msg, err)
}

// CheckSource says why source cannot be a message's Source on the Store.
func (p *Processor) CheckSource(source string) error {
	return p.core.CheckSource(source)
}

// Tracing reports whether a delivery given ctx is traced (the rule on
// idem.Options.TracerProvider): only then is its span worth naming
// (seam.WithSpan).
func (p *Processor) Tracing(ctx context.Context) bool {
	return p.core.Tracing(ctx)
}

// Now is the Store's clock.
func (p *Processor) Now() time.Time { return p.core.Now() }

// Recover runs fn and turns a panic in it into an *idem.PanicError naming
// callback, as the Store does for the callbacks it calls: every callback
// an adapter calls fails one delivery, never the process. It needs no
// Store (idem/stream runs handlers without one).
func Recover(key, callback string, fn func() error) error {
	var err error
	if v, stack, panicked := seam.Recover(func() { err = fn() }); panicked {
		return &idem.PanicError{Key: key, Callback: callback, Value: v, Stack: stack}
	}
	return err
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
