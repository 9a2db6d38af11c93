package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/idemkit/kit/idem"
	"github.com/idemkit/kit/idem/internal/adapt"
)

// globals are the flags every subcommand takes: where the claims are, and
// the Store options that shape their keys and attributes.
type globals struct {
	table, outboxTable  string
	prefix, scope       string
	sortKey, sortKeyVal string
	attrs               kvFlag
	region, profile     string
	local               string
	tenant              string
}

func (g *globals) register(fs *flag.FlagSet) {
	if g.attrs == nil {
		g.attrs = kvFlag{}
	}
	fs.StringVar(&g.table, "table", g.table, "the processed-ids `table` (required)")
	fs.StringVar(&g.outboxTable, "outbox-table", g.outboxTable, "the outbox `table` (idem.Options.OutboxTable; default: the processed-ids table)")
	fs.StringVar(&g.prefix, "prefix", g.prefix, "the Store's KeyPrefix, such as IDEM# (idem.Options.KeyPrefix)")
	fs.StringVar(&g.scope, "scope", g.scope, "the Store's Scope, which replaces the Source in keys (idem.Options.Scope)")
	fs.StringVar(&g.sortKey, "sort-key", g.sortKey, "the table's sort key `attribute`, if it has one (idem.Options.Attributes.SortKey)")
	fs.StringVar(&g.sortKeyVal, "sort-key-value", g.sortKeyVal, "the claims' sort key `value` (idem.Options.SortKeyValue; default IDEM with -sort-key)")
	fs.Var(g.attrs, "attr", "an attribute name the Store overrides, `field=name` such as outcome=status (repeatable; fields as in idem.AttributeNames, lower case)")
	fs.StringVar(&g.region, "region", g.region, "the AWS `Region` (default: the SDK's, from AWS_REGION or the profile)")
	fs.StringVar(&g.profile, "profile", g.profile, "the shared config `profile` (default: AWS_PROFILE, else default)")
	fs.StringVar(&g.tenant, "tenant", g.tenant, "the `tenant` whose claims these are, for a function in Lambda's tenant isolation mode (idem.Message.Tenant; its keys start #t=TENANT#)")
	fs.StringVar(&g.local, "local", g.local, "a running make local stack's state `file` (bin/local/stack.json): its endpoints, Region and dummy credentials")
}

// env is what a subcommand works with.
type env struct {
	stdout, stderr io.Writer
	claims         *claims
	sqs            *sqs.Client
	local          *localState // nil unless -local
	scoped         bool        // -scope: the Source has no part in keys
	now            func() time.Time
}

// open checks the global flags and builds the clients; no call is made.
func (g *globals) open(ctx context.Context, stdout, stderr io.Writer) (*env, error) {
	if g.table == "" {
		return nil, usagef("-table is required: the processed-ids table (the stack's ProcessedTableName output)")
	}
	attrs, err := g.attributes()
	if err != nil {
		return nil, err
	}
	cfg, local, err := g.awsConfig(ctx)
	if err != nil {
		return nil, err
	}
	db := dynamodb.NewFromConfig(cfg, func(o *dynamodb.Options) {
		if local != nil {
			o.BaseEndpoint = aws.String(local.DynamoDBEndpoint)
		}
	})
	sq := sqs.NewFromConfig(cfg, func(o *sqs.Options) {
		if local != nil && local.SQSEndpoint != "" {
			o.BaseEndpoint = aws.String(local.SQSEndpoint)
		}
	})
	sortKeyVal := g.sortKeyVal
	if g.sortKey != "" && sortKeyVal == "" {
		sortKeyVal = "IDEM" // idem.Options.SortKeyValue's default
	}
	if g.sortKey == "" && g.sortKeyVal != "" {
		return nil, usagef("-sort-key-value needs -sort-key, the attribute it is the value of")
	}
	attrs.SortKey = g.sortKey
	store, err := idem.New(db, g.table, func(o *idem.Options) {
		o.KeyPrefix, o.Scope = g.prefix, g.scope
		o.Attributes, o.SortKeyValue = attrs, sortKeyVal
		o.OutboxTable = g.outboxTable
		o.Logger = slog.New(slog.DiscardHandler)
	})
	if err != nil {
		// The Store's own check of -prefix and -scope, in its words.
		return nil, usagef("%s", strings.TrimPrefix(err.Error(), "idem: New: "))
	}
	if g.tenant != "" {
		if err := adapt.Core(store).CheckTenant(g.tenant); err != nil {
			return nil, usagef("-tenant: %v", err)
		}
	}
	outbox := g.outboxTable
	if outbox == "" {
		outbox = g.table
	}
	c := &claims{db: db, store: store, table: g.table, outboxTable: outbox, prefix: g.prefix, tenant: g.tenant, attrs: attrs, sortKeyValue: sortKeyVal}
	return &env{stdout: stdout, stderr: stderr, claims: c, sqs: sq, local: local, scoped: g.scope != "", now: time.Now}, nil
}

// awsConfig is the SDK's default configuration, whose service clients
// honour AWS_ENDPOINT_URL_<SERVICE> and AWS_ENDPOINT_URL themselves; or,
// with -local, the running stack's.
func (g *globals) awsConfig(ctx context.Context) (aws.Config, *localState, error) {
	if g.local != "" {
		st, err := readLocalState(g.local)
		if err != nil {
			return aws.Config{}, nil, err
		}
		// The local servers take any credentials.
		return aws.Config{Region: st.Region, Credentials: credentials.NewStaticCredentialsProvider("local", "local", "")}, st, nil
	}
	var opts []func(*config.LoadOptions) error
	if g.region != "" {
		opts = append(opts, config.WithRegion(g.region))
	}
	if g.profile != "" {
		opts = append(opts, config.WithSharedConfigProfile(g.profile))
	}
	cfg, err := config.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return aws.Config{}, nil, fmt.Errorf("AWS configuration: %w", err)
	}
	if cfg.Region == "" {
		if _, err := os.Stat(localStatePath); err == nil {
			return aws.Config{}, nil, usagef("no AWS Region: set AWS_REGION, a profile's region, or -region; for the make local stack running here, -local %s", localStatePath)
		}
		return aws.Config{}, nil, usagef("no AWS Region: set AWS_REGION, a profile's region, or -region")
	}
	return cfg, nil, nil
}

// localStatePath is where make local writes its state file, from the
// repository's root.
const localStatePath = "bin/local/stack.json"

// localState is the part of idem-local's state file (idem/cmd/idem-local,
// writeState) this command reads: how a second process finds the running
// stack, as `idem-local send` does.
type localState struct {
	Region           string            `json:"region"`
	DynamoDBEndpoint string            `json:"dynamodbEndpoint"`
	SQSEndpoint      string            `json:"sqsEndpoint"`
	Queues           map[string]string `json:"queues"` // logical id → URL
}

func readLocalState(path string) (*localState, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, usagef("-local %s: no such file: is make local running (it writes bin/local/stack.json)?", path)
	}
	if err != nil {
		return nil, fmt.Errorf("-local: %w", err)
	}
	var st localState
	if err := json.Unmarshal(b, &st); err != nil || st.DynamoDBEndpoint == "" || st.Region == "" {
		return nil, usagef("-local %s is not idem-local's state file (no region or DynamoDB endpoint)", path)
	}
	return &st, nil
}

// kvFlag is a repeatable key=value flag.
type kvFlag map[string]string

func (m kvFlag) String() string { return "" }

func (m kvFlag) Set(s string) error {
	k, v, ok := strings.Cut(s, "=")
	if !ok || k == "" || v == "" {
		return fmt.Errorf("want field=name, got %q", s)
	}
	m[k] = v
	return nil
}

// attributes are the claim record's attribute names: -attr's overrides,
// the rest left empty for idem.New to default, as a Store's are.
func (g *globals) attributes() (idem.AttributeNames, error) {
	var a idem.AttributeNames
	fields := map[string]*string{
		"key": &a.Key, "expiresat": &a.ExpiresAt, "claimedat": &a.ClaimedAt, "source": &a.Source,
		"fingerprint": &a.Fingerprint, "payloaddigest": &a.PayloadDigest, "outcome": &a.Outcome, "response": &a.Response,
		"leaseuntil": &a.LeaseUntil, "token": &a.Token, "leaseid": &a.LeaseID,
	}
	for k, v := range g.attrs {
		p, ok := fields[strings.ToLower(k)]
		if !ok {
			return a, usagef("-attr %s=%s: no such field; want one of key, expiresAt, claimedAt, source, fingerprint, payloadDigest, outcome, response, leaseUntil, token, leaseId (the sort key: -sort-key)", k, v)
		}
		*p = v
	}
	return a, nil
}
