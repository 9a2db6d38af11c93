package idem

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"
)

// DescribeTableAPI is the call a Store reads its claims table's
// description with, once, before its first claim
// (Options.WritesInOneRegion). *dynamodb.Client implements it.
type DescribeTableAPI interface {
	DescribeTable(ctx context.Context, params *dynamodb.DescribeTableInput, optFns ...func(*dynamodb.Options)) (*dynamodb.DescribeTableOutput, error)
}

// A claim is a conditional write in one Region: on a global table that
// accepts writes in several Regions with eventual consistency (the
// default), replication resolves concurrent writes by last writer wins,
// so one message delivered in two Regions is claimed, and applied, in
// both (FACTS: global tables). The guard reads the table's description
// once and refuses to claim on such a table. DescribeTable asked in one
// Region lists the replicas in the other Regions, and sometimes its own
// too: any replica in a Region other than the Store's own refuses.
//
// The same description tells a missing claims table
// (ResourceNotFoundException) apart from an outage, before the first
// claim; a transaction answered so later names its tables (tableNotFound).

// tableGuard is what the Store learnt of its claims table: nothing yet,
// or that it may claim on it (checked), or why not (refusal).
type tableGuard struct {
	mu      sync.Mutex
	checked bool
	refusal string
}

// checkTable says why the Store may not claim on its table, reading the
// table's description on its first call. A client without DescribeTable,
// and a Store told the table is written in one Region, are not checked.
// A missing table is not remembered: the next delivery reads again, and
// claims once the table exists.
func (s *Store) checkTable(ctx context.Context, key string) error {
	if s.describer == nil || s.opts.WritesInOneRegion {
		return nil
	}
	g := &s.guard
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.checked {
		out, err := s.describer.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: &s.table})
		switch {
		case isNotFound(err):
			return &TableNotFoundError{Key: key, Tables: []string{s.table}, Claims: true, Region: s.region, Err: err}
		case isAccessDenied(err):
			return &InvalidError{Key: key, Server: true, Reason: fmt.Sprintf("DescribeTable %s is denied: a Store reads its claims table's description once, to refuse a table written in several Regions; grant dynamodb:DescribeTable on it, or set idem.Options.WritesInOneRegion if only one Region writes it (%v)", s.table, err)}
		case err != nil:
			return &RetryableError{Key: key, Attempts: 1, Err: fmt.Errorf("DescribeTable %s, read once before the first claim: %w", s.table, err)}
		}
		g.checked, g.refusal = true, replicatedRefusal(out.Table, s.region)
	}
	if g.refusal != "" {
		return &InvalidError{Key: key, Server: true, Reason: g.refusal}
	}
	return nil
}

// replicatedRefusal says why a table described as t cannot hold claims: it
// has a replica in a Region other than the Store's own, each of which
// accepts writes, with eventual consistency; "" when it can. The Store's
// Region is the one in the table's ARN, else the client's (region); when
// neither says, every replica listed is taken for another Region's.
func replicatedRefusal(t *types.TableDescription, region string) string {
	if t == nil || t.MultiRegionConsistency == types.MultiRegionConsistencyStrong {
		return ""
	}
	if r := arnRegion(aws.ToString(t.TableArn)); r != "" {
		region = r
	}
	var others []string
	for _, r := range t.Replicas {
		if name := aws.ToString(r.RegionName); name != region && !slices.Contains(others, name) {
			others = append(others, name)
		}
	}
	legacy := aws.ToString(t.GlobalTableVersion) == "2017.11.29" // its replicas are not in DescribeTable
	if len(others) == 0 && !legacy {
		return ""
	}
	what := "a global table of version 2017.11.29"
	if len(others) > 0 {
		in := strings.Join(others, ", ")
		if region != "" {
			in = region + " (this Store's Region), " + in
		}
		what = "a global table replicated in " + in
	}
	return fmt.Sprintf("the claims table %s is %s with multi-Region eventual consistency: each Region accepts writes and the last writer wins, so a message delivered in two Regions would be claimed and applied in both. Claim in one Region: a table of the Region's own, or this one written in one Region only (then set idem.Options.WritesInOneRegion), or a table with multi-Region strong consistency",
		aws.ToString(t.TableName), what)
}

// arnRegion is the Region of an ARN ("arn:aws:dynamodb:us-east-1:…"), or
// "" when arn is not one.
func arnRegion(arn string) string {
	parts := strings.SplitN(arn, ":", 5)
	if len(parts) < 5 || parts[0] != "arn" {
		return ""
	}
	return parts[3]
}

// clientRegion is the Region client sends to, when it says, as a
// *dynamodb.Client does: the Store's own when its table's ARN does not
// say, and the one a missing table's error names (it has no ARN).
func clientRegion(client TransactWriteAPI) string {
	if c, ok := client.(interface{ Options() dynamodb.Options }); ok {
		return c.Options().Region
	}
	return ""
}

// isAccessDenied says whether err is IAM's refusal of the call.
func isAccessDenied(err error) bool {
	var ae smithy.APIError
	return errors.As(err, &ae) && strings.Contains(ae.ErrorCode(), "AccessDenied")
}

// isNotFound says whether err is DynamoDB's answer that a table the call
// names does not exist (in the client's Region).
func isNotFound(err error) bool {
	var ae smithy.APIError
	return errors.As(err, &ae) && ae.ErrorCode() == "ResourceNotFoundException"
}

// tableNotFound is a delivery's error when DynamoDB answered its
// transaction, the claim of key with writes, err, a
// ResourceNotFoundException; nil for any other error. The answer names no
// table: the claims table is described again (on this failure only) to
// leave it out of the candidates when it exists, or name it alone when it
// does not.
func (s *Store) tableNotFound(ctx context.Context, key string, writes []types.TransactWriteItem, err error) error {
	if !isNotFound(err) {
		return nil
	}
	tables := []string{s.table}
	for _, t := range tablesOf(writes) {
		if !slices.Contains(tables, t) {
			tables = append(tables, t)
		}
	}
	if s.describer != nil {
		_, derr := s.describer.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: &s.table})
		switch {
		case isNotFound(derr):
			return &TableNotFoundError{Key: key, Tables: tables[:1], Claims: true, Region: s.region, Err: err}
		case derr == nil && len(tables) > 1:
			tables = tables[1:]
		}
	}
	return &TableNotFoundError{Key: key, Tables: tables, Region: s.region, Err: err}
}
