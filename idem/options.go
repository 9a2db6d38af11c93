package idem

import (
	"log/slog"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/idemkit/kit/idem/internal/wire"
)

// Options configure a Store. Every default is written once, on its field,
// and applied in New.
type Options struct {
	// Attributes names the claim record's attributes; each name left
	// empty defaults as its field says.
	Attributes AttributeNames

	// SortKeyValue is the claim record's sort key value, for tables whose key
	// has a sort key (Attributes.SortKey). Defaults to "IDEM" when
	// Attributes.SortKey is set; unused otherwise.
	SortKeyValue string

	// KeyPrefix starts every claim key, so claim records can share a table
	// with other items (single-table designs). It ends with "#", such as
	// "IDEM#", so that no prefix and scope read as another's; New refuses
	// one that does not. Stores that share a table each need their own
	// prefix, none the start of another's ("A#" and "A#B#" could meet):
	// keys are told apart by prefix and scope only. Defaults to "".
	KeyPrefix string

	// Scope is the namespace of message ids: the claim key is
	// KeyPrefix + scope + "#" + id, so two senders may use the same ids.
	// A scope holds no "#", so that the first "#" after KeyPrefix ends it
	// and no two (scope, id) pairs share a key; New refuses a Scope with
	// one, and Process a message whose Source, used as the scope, has one.
	// Defaults to the message's Source, or "default" when that is empty.
	Scope string

	// SharedAcrossTenants puts every tenant's claims in one key space:
	// Message.Tenant (and the invoke's tenant id) no longer scopes the
	// claim key, so one tenant's message id answers another's redelivery.
	// For a function whose tenants are one sender's partitions, not
	// separate senders. Defaults to false: each tenant's claims apart,
	// under KeyPrefix + "#t=" + tenant + "#" + scope + "#" + id.
	SharedAcrossTenants bool

	// WritesInOneRegion says that the claims table, if it is a global
	// table replicated with multi-Region eventual consistency, is written
	// in one Region only (the others stand by), so the Store may claim on
	// it. Defaults to false: on its first claim a Store reads the table's
	// description (one DescribeTable a cold start, which needs
	// dynamodb:DescribeTable) and refuses to claim on a table with a
	// replica in a Region other than its own, with eventual consistency,
	// where one message delivered in two Regions would be applied in both.
	WritesInOneRegion bool

	// RetentionDays is how long a claim is kept, in days. It must exceed the
	// longest time any sender may redeliver a message (SQS keeps messages up
	// to 14 days, Stripe retries for 3). At most 36,500. Defaults to 30.
	RetentionDays int

	// OutboxTable is the table Effect.Messages are written to, as outbox
	// items, for a relay on its stream. It has the processed-ids table's
	// key schema (Attributes.Key and SortKey) and TTL attribute
	// (Attributes.ExpiresAt). Defaults to the processed-ids table: its
	// stream's event source mapping then passes only the outbox items
	// (idem/outbox's FilterPattern).
	OutboxTable string

	// OutboxRetention is how long an outbox item is kept before TTL
	// deletes it: longer than a DynamoDB stream keeps its records (24
	// hours), so that each item is relayed, or sent to the relay's
	// on-failure destination, while it exists. Defaults to 48 hours.
	OutboxRetention time.Duration

	// MaxResponseBytes bounds the response stored with a claim; a larger
	// response is an *InvalidError and commits nothing. Defaults to 65,536.
	MaxResponseBytes int

	// MaxAttempts bounds how many times a transaction is sent that
	// DynamoDB throttled (a cancellation naming ThrottlingError or
	// ProvisionedThroughputExceeded), within the context's deadline; past
	// it the delivery is a *RetryableError. Contention is not bounded by
	// it: a transaction cancelled by transaction conflicts alone, and a
	// lease's UpdateItem answered TransactionConflictException or
	// ReplicatedWriteConflictException, are sent again for as long as the
	// delivery has time (the context's deadline less 250 milliseconds, or
	// 30 seconds when the context has none), then the delivery is a
	// *ContendedError. Defaults to 5.
	MaxAttempts int

	// BackoffBase is the first retry's largest delay; each retry doubles it,
	// up to BackoffMax, and the delay is drawn uniformly below it (full
	// jitter). Defaults to 25 milliseconds.
	BackoffBase time.Duration

	// BackoffMax caps a retry's delay. Defaults to 1 second.
	BackoffMax time.Duration

	// CacheSize bounds an in-memory cache of the claims this Store has seen
	// committed (its own, and those a cancelled claim returned): a
	// duplicate whose claim is cached is answered without a call, key reuse
	// still detected, and a cached claim is used only until it expires.
	// Each entry keeps its stored response, so the cache holds at most
	// CacheSize × (the largest response + about 300 bytes). A claim record
	// deleted by hand to have its message processed again is still
	// answered from the cache of a warm environment until it expires. Zero
	// or negative: no cache. Defaults to 0.
	CacheSize int

	// ReadFirstAbove is the share of recent deliveries like this one, in
	// this environment, that were duplicates found in DynamoDB, above
	// which a delivery reads its claim (one GetItem, eventually
	// consistent, 0.5 RRU) before it runs its handler: a duplicate is then
	// answered by the read alone, and a first delivery pays the read and
	// its transaction. At or below it a delivery goes straight to its
	// transaction, whose claim's condition answers a duplicate (a
	// cancelled transaction, whose units DynamoDB does not document). A
	// delivery takes one way or the other, never both at once: a
	// duplicate costs one call, a first delivery at most two. A sender's
	// deliveries are kept apart in four classes, each with its own share:
	// a key whose claim this environment saw settled before (its
	// redelivery to the same environment), a redelivery the sender counts
	// (Message.Attempt 2 or more), a first attempt it counts, and a
	// delivery nobody counts; the first two are taken for duplicates
	// until their share shows otherwise. The client must have GetItem
	// (GetItemAPI), else no read is made; ProcessLeased makes none (its
	// lease's UpdateItem answers a duplicate) and neither does
	// ProcessBatch. Negative: never read. Defaults to 0.3.
	ReadFirstAbove float64

	// Now is the clock. Defaults to time.Now.
	Now func() time.Time

	// Logger receives one record per outcome: Processed at DEBUG;
	// Duplicate, Rejected, Refused and InFlight at INFO; KeyReuse, Failed
	// and Fenced at WARN; TableNotFound at ERROR. Defaults to
	// slog.Default().
	Logger *slog.Logger

	// TracerProvider makes the spans of each delivery and of its DynamoDB
	// calls, for every delivery. Defaults to nil: OpenTelemetry's global
	// provider (otel.SetTracerProvider), used only for a delivery whose
	// context carries a recording span, such as the invoke's span that
	// otellambda's handler wrapper starts; without one no span is started,
	// which costs nothing.
	TracerProvider trace.TracerProvider

	// Observers are told of every outcome, once, after the Logger's
	// record: an emf.Writer on os.Stdout for CloudWatch metrics (the
	// idem/emf package), or your own. Defaults to none.
	Observers []Observer
}

// AttributeNames are the claim record's attribute names.
type AttributeNames struct {
	Key         string // partition key (S); defaults to "pk"
	SortKey     string // sort key (S), for tables that have one; defaults to none
	ExpiresAt   string // expiry in epoch seconds (N), the table's TTL attribute; defaults to "expiresAt"
	ClaimedAt   string // claim time, RFC 3339 (S); defaults to "claimedAt"
	Source      string // sender (S); defaults to "source"
	Fingerprint string // the payload's fingerprint (S); defaults to "fingerprint"
	// PayloadDigest is the payload's SHA-256, hex (S), stored only when the
	// fingerprint is another (Message.Fingerprint); defaults to "payloadDigest"
	PayloadDigest string
	Outcome       string // "Processed", "Rejected" or, under a lease, "Pending" (S); defaults to "outcome"
	Response      string // stored response (B), absent when empty; defaults to "response"
	LeaseUntil    string // a pending claim's lease end, epoch milliseconds (N); defaults to "leaseUntil"
	Token         string // the fencing token of the claim's last lease (N); defaults to "fence"
	LeaseID       string // a pending claim's lease id, random per delivery (S); defaults to "leaseId"
}

func (o *Options) setDefaults() {
	a := &o.Attributes
	for _, f := range []struct {
		v *string
		d string
	}{
		{&a.Key, wire.ClaimKeyAttr},
		{&a.ExpiresAt, wire.ExpiresAtAttr},
		{&a.ClaimedAt, wire.ClaimedAtAttr},
		{&a.Source, wire.SourceAttr},
		{&a.Fingerprint, wire.FingerprintAttr},
		{&a.PayloadDigest, wire.PayloadDigestAttr},
		{&a.Outcome, wire.OutcomeAttr},
		{&a.Response, wire.ResponseAttr},
		{&a.LeaseUntil, wire.LeaseUntilAttr},
		{&a.Token, wire.TokenAttr},
		{&a.LeaseID, wire.LeaseIDAttr},
	} {
		if *f.v == "" {
			*f.v = f.d
		}
	}
	if a.SortKey != "" && o.SortKeyValue == "" {
		o.SortKeyValue = "IDEM"
	}
	if o.RetentionDays == 0 {
		o.RetentionDays = 30
	}
	if o.OutboxRetention == 0 {
		o.OutboxRetention = 48 * time.Hour
	}
	if o.MaxResponseBytes == 0 {
		o.MaxResponseBytes = 64 << 10
	}
	if o.MaxAttempts == 0 {
		o.MaxAttempts = 5
	}
	if o.BackoffBase == 0 {
		o.BackoffBase = 25 * time.Millisecond
	}
	if o.BackoffMax == 0 {
		o.BackoffMax = time.Second
	}
	if o.ReadFirstAbove == 0 {
		o.ReadFirstAbove = 0.3
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
}

// retention is RetentionDays as a duration.
func (o *Options) retention() time.Duration {
	return time.Duration(o.RetentionDays) * 24 * time.Hour
}
