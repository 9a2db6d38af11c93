package idem

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/aws/aws-lambda-go/lambdacontext"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/idemkit/kit/idem/internal/seam"
)

// One delivery's way through the Store, a file a step, in the order the
// message meets them (farm-studio's walk of Store.Process's msg enters
// each once): here its span starts, its claim is identified (its key, its
// fingerprint), and deliver takes it along the rest: cache.go (a claim
// this process remembers), coalesce.go (another delivery of its key in
// flight here), readfirst.go (a read of its claim, when its sender's
// duplicates make it worth its cost), run.go (the handler, its outgoing
// messages), check.go (what DynamoDB would refuse of the effect),
// guard.go (a table DynamoDB would not keep exactly once), besideread.go
// and transact.go (the transaction that commits the effect with the
// claim, beside the read if one went out), claim.go (the claim its
// condition met), answer.go (what a claim found on the way answers the
// delivery); last, outcome.go logs the outcome, tells the Observers and
// ends the span.

// Process runs h for msg and commits the effect it describes together with
// msg's claim, in one TransactWriteItems.
//
// A nil error means the delivery is done: Processed, Duplicate (nothing
// applied; Result.Record.Response is the stored response), or Rejected (the
// effect's condition failed and Effect.Rejected recorded it). Any error
// means the delivery must be retried or dead-lettered: *InvalidError,
// *KeyReuseError, *RejectedError, *HandlerError, *PanicError,
// *TableNotFoundError (a table missing from the client's Region) or
// *StoreError (nothing committed), *ReplayError (a Duplicate whose
// Message.Replay failed; nothing applied), *LeaseHeldError (a ProcessLeased
// delivery of the message is running; nothing done), or *RetryableError
// (perhaps committed with its answer lost; the retry is then a
// Duplicate). A pending claim whose lease ended is committed over, in a
// second transaction: h calls nothing out.
//
// Deliveries of one key at once in this process (Lambda Managed Instances
// run several invokes in one process; a batch may carry a message twice)
// coalesce: one runs h and commits, the others wait for its outcome and
// are its Duplicates (Result.Cached), with no call of their own; when it
// fails, the next one runs.
func (s *Store) Process(ctx context.Context, msg Message, h Handler) (Result, error) {
	msg = withTenant(ctx, msg)
	ctx, t := s.startDelivery(ctx, msg, -1)
	defer t.endAfterPanic()
	id, err := s.identify(msg)
	var res Result
	if err == nil {
		res, err = s.deliver(ctx, msg, id, h)
	}
	s.settle(ctx, t, msg, id, res, err)
	return res, err
}

// deliver answers a delivery of id: from a claim this process knows (the
// cache's, or the one a delivery of its key in flight here settled), or
// else as the leader of its key's call in this process, from a read of its
// claim or by running it. What a leader settles goes into the cache, is
// replayed to it when a Duplicate, then counts toward its sender's share
// of duplicates and answers the deliveries of the key waiting here (the
// last two deferred). After a panic past every recovery res and err are
// still the zero values, which settle nothing: nothing is cached or
// counted, and the waiting deliveries run on their own.
func (s *Store) deliver(ctx context.Context, msg Message, id Record, h Handler) (res Result, err error) {
	stored, found := s.cache.get(id.Key, s.opts.Now())
	cached := found
	if !found {
		var lead *keyCall
		if lead, stored, found, err = s.leadOrWait(ctx, id); err != nil {
			return Result{}, err
		}
		cached = found
		if lead != nil {
			defer func() { lead.finish(res, err) }()
			class := s.classOf(msg, id.Key)
			defer func() { s.rates.count(class, res, err) }()
			if stored, found = s.readFirst(ctx, msg, id); !found {
				res, err = s.run(ctx, msg, id, h)
			}
		}
	}
	switch {
	case cached:
		return s.answerKnown(msg, id, stored)
	case found:
		res, err = s.storedAnswer(id, stored)
	}
	// The claim this delivery committed or met, whether or not its
	// record replays to it.
	s.cacheSettled(res, err)
	if err == nil && res.Outcome == Duplicate {
		if err = replay(msg, id.Key, res.Record); err != nil {
			res = Result{}
		}
	}
	return res, err
}

// deliveryTrace is what a delivery's span gathers on its way.
type deliveryTrace struct {
	span   trace.Span
	sends  int
	server bool // an HTTP server's span (a webhook's)
	ended  bool
}

// startDelivery starts msg's span: named and attributed by the adapter
// that received it (seam.WithSpan), else "process <source>", a child of the
// message's own trace context when the adapter read one; batch is the
// message's place in a batch (seam.WithBatchSpans), or -1. Nil when no
// span is recorded.
func (s *Store) startDelivery(ctx context.Context, msg Message, batch int) (context.Context, *deliveryTrace) {
	if !s.tracing(ctx) {
		if seam.Delivery(ctx) != nil { // inside another delivery's handler: not its calls
			ctx = seam.WithDelivery(ctx, (*deliveryTrace)(nil))
		}
		return ctx, nil
	}
	d := seam.SpanFrom(ctx)
	if batch >= 0 {
		d = seam.BatchSpanFrom(ctx, batch)
	}
	if d.Name == "" {
		d.Name, d.Kind = "process "+msg.Source, trace.SpanKindConsumer
	}
	opts := []trace.SpanStartOption{trace.WithSpanKind(d.Kind), trace.WithAttributes(d.Attrs...), trace.WithAttributes(attrSource.String(msg.Source))}
	if lc, ok := lambdacontext.FromContext(ctx); ok {
		opts = append(opts, trace.WithAttributes(attribute.String("faas.invocation_id", lc.AwsRequestID), attribute.String("cloud.resource_id", lc.InvokedFunctionArn)))
	}
	if d.Parent.IsValid() {
		// The message's own trace continues; the invoke's, if any, is linked.
		if here := trace.SpanContextFromContext(ctx); here.IsValid() {
			opts = append(opts, trace.WithLinks(trace.Link{SpanContext: here}))
		}
		ctx = trace.ContextWithRemoteSpanContext(ctx, d.Parent)
	}
	ctx, span := s.tracer.Start(ctx, d.Name, opts...)
	if !span.IsRecording() {
		span.End()
		// Its context goes on, marked not sampled; its calls make no span.
		return seam.WithDelivery(ctx, (*deliveryTrace)(nil)), nil
	}
	t := &deliveryTrace{span: span, server: d.Kind == trace.SpanKindServer}
	return seam.WithDelivery(ctx, t), t
}

// endAfterPanic ends the span of a delivery that a panic past every
// recovery cut short (a client's or a log handler's): deferred, it does
// nothing once end ran.
func (t *deliveryTrace) endAfterPanic() {
	if t == nil || t.ended {
		return
	}
	t.ended = true
	t.span.SetAttributes(attribute.String("error.type", "panic"))
	t.span.SetStatus(codes.Error, "panic")
	t.span.End()
}

// identify checks msg and returns the claim it would make: its key (and
// the key item, built once for every write and read of the claim), its
// fingerprint and its payload's digest.
func (s *Store) identify(msg Message) (Record, error) {
	key := s.claimKey(msg)
	if msg.Source != "" {
		if err := s.checkSource(msg.Source); err != nil {
			return Record{Key: key}, &InvalidError{Key: key, Reason: err.Error()}
		}
	}
	if msg.Tenant != "" {
		if err := checkTenant(msg.Tenant); err != nil {
			return Record{}, &InvalidError{Reason: err.Error()}
		}
	}
	switch {
	case strings.TrimSpace(msg.ID) == "": // only white space is a producer's bug, not an id
		return Record{}, &InvalidError{Reason: "empty message id"}
	case !utf8.ValidString(key):
		return Record{Key: key}, &InvalidError{Key: key, Reason: "message id is not valid UTF-8"}
	case len(key) > maxPartitionKeyBytes:
		return Record{Key: key}, &InvalidError{Key: key[:64] + "…", Reason: fmt.Sprintf("claim key is %d bytes; DynamoDB allows %d", len(key), maxPartitionKeyBytes)}
	}
	digest := Fingerprint(msg.Payload)
	fp := msg.Fingerprint
	if fp == "" {
		fp = digest
	}
	return Record{Key: key, Source: msg.Source, Fingerprint: fp, PayloadDigest: digest, keyItem: s.keyItem(key)}, nil
}

// claimKey is the claim record's partition key value:
// KeyPrefix + scope + "#" + id, or, for a tenant's message,
// KeyPrefix + "#t=" + tenant + "#" + scope + "#" + id. A scope is never
// empty and holds no "#", so no tenant's key is another's or a key without
// a tenant; and an outbox item's key starts KeyPrefix + "#outbox#".
func (s *Store) claimKey(msg Message) string {
	scope := s.opts.Scope
	if scope == "" {
		scope = msg.Source
	}
	if scope == "" {
		scope = "default"
	}
	if msg.Tenant != "" && !s.opts.SharedAcrossTenants {
		return s.opts.KeyPrefix + "#t=" + msg.Tenant + "#" + scope + "#" + msg.ID
	}
	return s.opts.KeyPrefix + scope + "#" + msg.ID
}

// CloudWatch's limit on a dimension value (API reference, "Dimension").
const maxDimensionValueBytes = 1024

// checkSource says why source cannot be a message's Source for this Store:
// it is the metrics' dimension value, which CloudWatch takes as 1 to 1,024
// printable ASCII characters, not all spaces (it drops a metric with any
// other); and, when the Store has no Options.Scope, it is the scope of the
// message's key, which holds no "#".
func (s *Store) checkSource(source string) error {
	if err := checkMetricName("Source", source, maxDimensionValueBytes); err != nil {
		return err
	}
	if s.opts.Scope == "" && strings.Contains(source, "#") {
		return fmt.Errorf("source %q holds a \"#\", which would make claim keys ambiguous as their scope; set idem.Options.Scope, or choose a Source without one", source)
	}
	return nil
}

// checkMetricName accepts 1 to max printable ASCII characters, not all
// spaces.
func checkMetricName(what, v string, max int) error {
	switch {
	case v == "":
		return fmt.Errorf("%s is empty", what)
	case len(v) > max:
		return fmt.Errorf("%s is %d bytes; CloudWatch allows %d", what, len(v), max)
	case strings.TrimSpace(v) == "":
		return fmt.Errorf("%s is all spaces; CloudWatch needs a character that is not", what)
	}
	for i := 0; i < len(v); i++ {
		if c := v[i]; c < ' ' || c > '~' {
			return fmt.Errorf("%s %q has a control or non-ASCII character at byte %d; CloudWatch takes printable ASCII only", what, v, i)
		}
	}
	return nil
}

// keyItem is the claim record's primary key.
func (s *Store) keyItem(key string) map[string]types.AttributeValue {
	a := s.opts.Attributes
	k := map[string]types.AttributeValue{a.Key: &types.AttributeValueMemberS{Value: key}}
	if a.SortKey != "" {
		k[a.SortKey] = &types.AttributeValueMemberS{Value: s.opts.SortKeyValue}
	}
	return k
}

// Fingerprint is the SHA-256 of a payload, in hex: what tells a redelivery
// from a reuse of its id.
func Fingerprint(payload []byte) string {
	sum := sha256.Sum256(payload)
	return hex.EncodeToString(sum[:])
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
