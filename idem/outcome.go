package idem

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"

	"github.com/idemkit/kit/idem/internal/tracectx"
)

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
	// (ProcessLeased; a *LeaseHeldError), was running in this process for
	// longer than an adapter let this one wait (an *InFlightError), or was writing its claim
	// through every one of this delivery's attempts (a *RetryableError of
	// a transaction conflict on the claim); nothing was done, and the
	// delivery is to be retried. Counted apart from Failed: it is a race
	// another delivery of the message won, not a fault.
	InFlight Outcome = "InFlight"
	// Fenced: a delivery under a lease lost it before its commit, which
	// then applied nothing (*FencedError): another delivery took the claim
	// over after the lease ended.
	Fenced Outcome = "Fenced"
	// Contended: the transaction met other transactions on its effect's
	// items on every attempt until the delivery's time ran out
	// (*ContendedError); nothing was committed, and the delivery is to be
	// retried. Counted apart from Failed: the item is hotter than one
	// transaction at a time (the guide's hot items).
	Contended Outcome = "Contended"
	// TableNotFound: the claims table, or a table of the effect, does not
	// exist in the client's Region (*TableNotFoundError); nothing was
	// done, and the delivery is to be retried once the table exists or its
	// name is fixed. Counted apart from Failed: a configuration error, not
	// an outage, and logged at ERROR with the table and the Region.
	TableNotFound Outcome = "TableNotFound"

	// Pending is a claim record's outcome while a lease holds it; never a
	// delivery's.
	Pending Outcome = "Pending"
)

// An Observer is told of each delivery's outcome, once: when Process,
// ProcessBatch or ProcessLeased has settled it, or an adapter has turned
// it away before its claim. It runs on the delivery's goroutine after the outcome is decided, so
// it must be quick and safe for concurrent use; a panic in it is logged
// and changes nothing. The emf package's Writer is one, for CloudWatch
// metrics; the Store's Logger always writes its own record first.
type Observer interface {
	Observe(ctx context.Context, o Observation)
}

// Observation is one delivery's outcome, as logged.
type Observation struct {
	Outcome Outcome
	Message Message
	// Key is the claim key, or "" when the message had no id.
	Key string
	// Result is the outcome's details, for Processed, Duplicate and
	// Rejected.
	Result Result
	// Err is why, for every outcome but Processed, Duplicate and Rejected.
	Err error
	// Time is when it was settled, by Options.Now.
	Time time.Time
}

// observer writes one log record per outcome, then tells the Observers.
type observer struct {
	observers []Observer
	log       *slog.Logger
	now       func() time.Time
}

func newObserver(o *Options) observer {
	return observer{observers: o.Observers, log: o.Logger, now: o.Now}
}

// outcomeOf names the outcome of a Process call, as logged and counted.
func outcomeOf(res Result, err error) Outcome {
	switch {
	case err == nil:
		return res.Outcome
	case errors.Is(err, ErrKeyReuse):
		return KeyReuse
	case errors.Is(err, ErrLeaseHeld), errors.Is(err, ErrInFlight), claimContended(err):
		return InFlight
	case errors.Is(err, ErrFenced):
		return Fenced
	case errors.Is(err, ErrContended):
		return Contended
	case errors.Is(err, ErrTableNotFound):
		return TableNotFound
	}
	return Failed
}

// report logs and counts a delivery an adapter turned away before its
// claim: Failed (its key unreadable, say) or Refused (a bad signature).
func (s *Store) report(ctx context.Context, outcome Outcome, msg Message, err error) {
	msg = withTenant(ctx, msg)
	key := ""
	if msg.ID != "" {
		key = s.keyName(msg)
	}
	s.obs.record(ctx, outcome, msg, claimKey{name: key}, Result{}, err)
}

// settle ends a delivery: its outcome logged, told to the Observers, and
// its span ended with it.
func (s *Store) settle(d *delivery) {
	s.obs.record(d.ctx, outcomeOf(d.res, d.err), d.msg, d.key, d.res, d.err)
	d.trace.end(d.key.name, d.res, d.err)
}

// record writes the log record of a delivery of k (its name "" when the
// message had no id) and tells the Observers.
func (o *observer) record(ctx context.Context, outcome Outcome, msg Message, k claimKey, res Result, err error) {
	key := k.name
	level := slog.LevelInfo
	switch outcome {
	case Processed:
		level = slog.LevelDebug
	case KeyReuse, Failed, Fenced, Contended:
		level = slog.LevelWarn
	case TableNotFound:
		level = slog.LevelError
	}
	if o.log.Enabled(ctx, level) {
		attrs := []slog.Attr{slog.String("outcome", string(outcome)), slog.String("id", msg.ID), slog.String("source", msg.Source), slog.String("key", key)}
		if msg.Tenant != "" {
			attrs = append(attrs, slog.String("tenant", msg.Tenant))
		}
		attrs = append(attrs, msg.LogAttrs...)
		if err != nil {
			attrs = append(errAttrs(attrs, err), slog.String("error", err.Error()))
		}
		if outcome == Duplicate {
			attrs = append(attrs, slog.Time("claimedAt", res.Record.ClaimedAt))
			if res.Cached {
				attrs = append(attrs, slog.Bool("cached", true))
			}
			if res.PayloadChanged { // a provider's event rendered afresh: still the same event
				attrs = append(attrs, slog.Bool("payloadChanged", true),
					slog.String("payloadDigest", k.digest), slog.String("storedPayloadDigest", res.Record.PayloadDigest))
			}
		}
		o.log.LogAttrs(ctx, level, "idem: "+string(outcome), attrs...)
	}
	if len(o.observers) > 0 {
		ob := Observation{Outcome: outcome, Message: msg, Key: key, Result: res, Err: err, Time: o.now()}
		for _, x := range o.observers {
			o.tell(ctx, x, ob)
		}
	}
}

// tell runs one Observer, whose panic must not undo a decided outcome.
func (o *observer) tell(ctx context.Context, x Observer, ob Observation) {
	defer func() {
		if v := recover(); v != nil {
			o.log.LogAttrs(ctx, slog.LevelError, "idem: an Observer panicked", slog.String("key", ob.Key),
				slog.String("outcome", string(ob.Outcome)), slog.Any("panic", v), slog.String("stack", string(debug.Stack())))
		}
	}()
	x.Observe(ctx, ob)
}

// errAttrs adds what err's type says beyond its message. Apart, so that a
// delivery without an error allocates none of the targets errors.As takes.
func errAttrs(attrs []slog.Attr, err error) []slog.Attr {
	var kr *KeyReuseError
	var pe *PanicError
	var lh *LeaseHeldError
	var fe *FencedError
	var nf *TableNotFoundError
	switch {
	case errors.As(err, &nf):
		attrs = append(attrs, slog.String("table", strings.Join(nf.Tables, ",")), slog.String("region", nf.Region))
	case errors.As(err, &kr):
		attrs = append(attrs, slog.String("fingerprint", kr.Fingerprint), slog.String("storedFingerprint", kr.Stored.Fingerprint))
	case errors.As(err, &lh):
		attrs = append(attrs, slog.Time("leaseUntil", lh.Until))
	case errors.As(err, &fe):
		attrs = append(attrs, slog.Int64("token", fe.Token), slog.Int64("storedToken", fe.Stored.Token))
	case errors.As(err, &pe):
		attrs = append(attrs, slog.String("stack", string(pe.Stack)))
	}
	return attrs
}

// end ends the delivery's span with what became of it. Errors are named
// by type, never by message: every message of the kit's names the key.
func (t *deliveryTrace) end(key string, res Result, err error) {
	if t == nil || t.ended {
		return
	}
	t.ended = true
	outcome := outcomeOf(res, err)
	attrs := []attribute.KeyValue{attrOutcome.String(string(outcome)), attrCached.Bool(res.Cached), attrSends.Int(t.sends)}
	if key != "" {
		attrs = append(attrs, attrKeyHash.String(tracectx.KeyHash(key)))
	}
	if res.Record.Token != 0 {
		attrs = append(attrs, attrToken.Int64(res.Record.Token))
	}
	var fe *FencedError
	if errors.As(err, &fe) {
		attrs = append(attrs, attrToken.Int64(fe.Token))
	}
	if err != nil {
		attrs = append(attrs, attribute.String("error.type", fmt.Sprintf("%T", err)))
	}
	t.span.SetAttributes(attrs...)
	switch outcome {
	case Failed, TableNotFound:
		t.span.SetStatus(codes.Error, string(outcome))
	case KeyReuse, Fenced:
		if !t.server { // an HTTP server's 4xx is the client's error, not the span's
			t.span.SetStatus(codes.Error, string(outcome))
		}
	}
	t.span.End()
}
