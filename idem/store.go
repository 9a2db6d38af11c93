package idem

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/trace"

	"github.com/idemkit/kit/idem/internal/seam"
)

// TransactWriteAPI is the DynamoDB call every Store makes: the claim and
// the effect in one transaction. *dynamodb.Client implements it, with
// GetItemAPI and UpdateItemAPI, which a Store uses when its client has
// them (New); a fake in a CPU benchmark may implement it alone.
type TransactWriteAPI interface {
	TransactWriteItems(ctx context.Context, params *dynamodb.TransactWriteItemsInput, optFns ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error)
}

// GetItemAPI is the call a Store reads a claim with before committing
// (Options.ReadFirstAbove). *dynamodb.Client implements it.
type GetItemAPI interface {
	GetItem(ctx context.Context, params *dynamodb.GetItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error)
}

// Store claims messages in a processed-ids table and commits their effects.
// It is safe for concurrent use; build it once, outside the Lambda handler.
type Store struct {
	seamHandle // what the kit's own packages reach of it (internal/seam)

	client    TransactWriteAPI
	reader    GetItemAPI       // client's GetItem, or nil: no read first
	updater   UpdateItemAPI    // client's UpdateItem, or nil: no lease
	describer DescribeTableAPI // client's DescribeTable, or nil: the table is not checked
	guard     tableGuard
	schemas   keySchemas // of the tables a batch's Puts write
	table     string
	region    string // the client's Region (the Store's own, named in its errors); "" when it does not say
	opts      Options
	obs       observer
	cache     *cache // nil without Options.CacheSize
	calls     keyCalls
	items     itemLocks    // the items this Store's transactions are writing
	rates     *rates       // each sender's recent duplicates, for ReadFirstAbove
	settled   *settledKeys // keys whose claims this Store saw settled
	tracer    trace.Tracer
	// keyNames are the claims table's key attribute names, sorted, as
	// validateEffect compares them.
	keyNames []string
	// claimNames are the claim's condition's attribute names (Store.claim),
	// the same for every claim: one map, which the SDK only reads.
	claimNames map[string]string
}

// seamHandle is the Store's Handle (internal/seam), in its own types.
type seamHandle = seam.Handle[Message, Outcome, Record, LeaseOptions]

// maxRetentionDays keeps the retention far from time.Duration's limit
// (about 106,751 days), past which an expiry would wrap into the past and
// every redelivery would claim again.
const maxRetentionDays = 36500

// New returns a Store that keeps claim records in table, through client.
// A *dynamodb.Client has every call a Store makes. Another client is
// asked, once, for three more: without GetItem (GetItemAPI) the Store
// never reads a claim first, whatever Options.ReadFirstAbove says; without
// UpdateItem (UpdateItemAPI) it takes no lease, and ProcessLeased (and an
// adapter's Lease option) is refused with an error; without DescribeTable
// (DescribeTableAPI) it does not check that its table is written in one
// Region (Options.WritesInOneRegion).
func New(client TransactWriteAPI, table string, optFns ...func(*Options)) (*Store, error) {
	var o Options
	for _, fn := range optFns {
		fn(&o)
	}
	o.setDefaults()
	if o.OutboxTable == "" {
		o.OutboxTable = table
	}
	switch {
	case client == nil:
		return nil, errors.New("idem: New: nil DynamoDB client")
	case table == "":
		return nil, errors.New("idem: New: empty processed-ids table name")
	case o.RetentionDays < 1 || o.RetentionDays > maxRetentionDays:
		return nil, fmt.Errorf("idem: New: RetentionDays is %d; it must be a whole number of days from 1 to %d", o.RetentionDays, maxRetentionDays)
	case o.MaxResponseBytes < 0 || o.MaxAttempts < 0 || o.BackoffBase < 0 || o.BackoffMax < 0 || o.OutboxRetention < 0:
		return nil, errors.New("idem: New: MaxResponseBytes, MaxAttempts, BackoffBase, BackoffMax and OutboxRetention must not be negative")
	case len(o.SortKeyValue) > maxSortKeyBytes:
		return nil, fmt.Errorf("idem: New: SortKeyValue is %d bytes; DynamoDB allows %d", len(o.SortKeyValue), maxSortKeyBytes)
	case strings.Contains(o.Scope, "#"):
		return nil, fmt.Errorf("idem: New: Scope %q holds a \"#\": the first \"#\" of a claim key ends its scope", o.Scope)
	case o.KeyPrefix != "" && !strings.HasSuffix(o.KeyPrefix, "#"):
		// Without it, prefix "a" and scope "bx" would give the keys of
		// prefix "ab" and scope "x".
		return nil, fmt.Errorf("idem: New: KeyPrefix %q does not end with \"#\": a prefix must end where the scope begins, such as \"IDEM#\"", o.KeyPrefix)
	}
	r := &rates{}
	keyNames := []string{o.Attributes.Key}
	if o.Attributes.SortKey != "" {
		keyNames = sortedNames(map[string]bool{o.Attributes.Key: true, o.Attributes.SortKey: true})
	}
	tp := o.TracerProvider
	if tp == nil {
		// The global provider's tracer forwards to the one a program
		// installs, even after New.
		tp = otel.GetTracerProvider()
	}
	reader, _ := client.(GetItemAPI)
	updater, _ := client.(UpdateItemAPI)
	describer, _ := client.(DescribeTableAPI)
	s := &Store{client: client, reader: reader, updater: updater, describer: describer, table: table, region: clientRegion(client), opts: o, obs: newObserver(&o), cache: newCache(o.CacheSize), rates: r, settled: newSettledKeys(),
		tracer: tp.Tracer(tracerName), keyNames: keyNames,
		claimNames: map[string]string{"#k": o.Attributes.Key, "#e": o.Attributes.ExpiresAt}}
	s.seamHandle = seam.NewHandle(&seam.Core[Message, Outcome, Record, LeaseOptions]{
		CheckSource: s.checkSource,
		CheckTenant: checkTenant,
		CheckLease:  s.checkLease,
		Report:      s.report,
		Now:         s.opts.Now,
		Tracing:     s.tracing,
		ClaimKey:    s.keyName,
		Decode:      s.decodeRecord,
		OutboxKey:   s.outboxKey,
	})
	return s, nil
}
