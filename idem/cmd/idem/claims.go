package main

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"

	"github.com/idemkit/kit/idem"
	"github.com/idemkit/kit/idem/internal/adapt"
	"github.com/idemkit/kit/idem/internal/wire"
)

// claims reads the processed-ids table as the Store that wrote it: keys
// from the Store's own (idem.Store.Adapter: ClaimKey), records decoded by it (Decode), outbox items by the ids
// wire.ID gives them.
type claims struct {
	db                 *dynamodb.Client
	store              *idem.Store // built with the global flags; never processes
	table, outboxTable string
	prefix             string              // -prefix, the Store's KeyPrefix
	tenant             string              // -tenant: the tenant's claims
	attrs              idem.AttributeNames // as given; names() fills the defaults
	sortKeyValue       string
}

// claim is a stored claim record, decoded, with the raw item it was read
// from (for conditions on exactly what was read).
type claim struct {
	idem.Record
	item    map[string]types.AttributeValue
	leaseID string
}

// names are the claim record's attribute names, defaults filled in from
// wire, as idem.Options documents them.
func (c *claims) names() idem.AttributeNames {
	a := c.attrs
	for _, f := range []struct {
		v *string
		d string
	}{
		{&a.Key, wire.ClaimKeyAttr}, {&a.ExpiresAt, wire.ExpiresAtAttr}, {&a.ClaimedAt, wire.ClaimedAtAttr},
		{&a.Source, wire.SourceAttr}, {&a.Fingerprint, wire.FingerprintAttr}, {&a.PayloadDigest, wire.PayloadDigestAttr},
		{&a.Outcome, wire.OutcomeAttr}, {&a.Response, wire.ResponseAttr}, {&a.LeaseUntil, wire.LeaseUntilAttr},
		{&a.Token, wire.TokenAttr}, {&a.LeaseID, wire.LeaseIDAttr},
	} {
		if *f.v == "" {
			*f.v = f.d
		}
	}
	return a
}

// key is the claim key the Store gives msg, of -tenant's.
func (c *claims) key(msg idem.Message) string {
	msg.Tenant = c.tenant
	return adapt.Core(c.store).ClaimKey(msg)
}

// checkSource says why source cannot be a message's Source on this Store,
// in the adapters' words.
func (c *claims) checkSource(source string) error {
	if source == "" {
		return nil
	}
	_, err := adapt.New(c.store, "source", source, nil)
	return err
}

// keyItem is the primary key of the item whose partition key is key.
func (c *claims) keyItem(key string) map[string]types.AttributeValue {
	a := c.names()
	k := map[string]types.AttributeValue{a.Key: &types.AttributeValueMemberS{Value: key}}
	if a.SortKey != "" {
		k[a.SortKey] = &types.AttributeValueMemberS{Value: c.sortKeyValue}
	}
	return k
}

// errOutboxItem: the key holds an outbox item, not a claim.
var errOutboxItem = errors.New("the key holds an outbox item, not a claim: do two Stores share the table without distinct -prefix?")

// tableErr is err from op on table, a table that is not there named as
// dlq names a missing queue rather than by the SDK's exception, and
// contention past the retries as retry said it.
func tableErr(op, table string, err error) error {
	if rnf := (*types.ResourceNotFoundException)(nil); errors.As(err, &rnf) {
		return failf("no table %q here (the Region, the account, the endpoint?)", table)
	}
	if f := (*failure)(nil); errors.As(err, &f) {
		return err
	}
	return fmt.Errorf("%s %s: %w", op, table, err)
}

// keyErr is tableErr for a call on one of c's items: DynamoDB refusing the
// key with a ValidationException is, most often, a table that is not a
// processed-ids table, which checkTable names.
func (c *claims) keyErr(ctx context.Context, op, table string, err error) error {
	if isCode(err, "ValidationException") {
		if terr := c.checkTable(ctx, table); terr != nil {
			return terr
		}
	}
	return tableErr(op, table, err)
}

// get reads key's claim with a consistent read: nil when there is none.
func (c *claims) get(ctx context.Context, key string) (*claim, error) {
	var out *dynamodb.GetItemOutput
	err := retry(ctx, "GetItem "+key, func() (err error) {
		out, err = c.db.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(c.table), Key: c.keyItem(key), ConsistentRead: aws.Bool(true)})
		return err
	})
	if err != nil {
		return nil, c.keyErr(ctx, fmt.Sprintf("GetItem %s in", key), c.table, err)
	}
	if out.Item == nil {
		return nil, nil
	}
	return c.decode(out.Item)
}

// checkTable says, as a failure, why table is not a processed-ids table
// of the Store the global flags describe: its key schema is not the
// claims' (the key attribute, and -sort-key's), as the accounts table's is
// not. Nil when it may be one, or when DescribeTable cannot tell.
func (c *claims) checkTable(ctx context.Context, table string) error {
	d, err := c.db.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(table)})
	if err != nil {
		if rnf := (*types.ResourceNotFoundException)(nil); errors.As(err, &rnf) {
			return tableErr("DescribeTable", table, err)
		}
		return nil
	}
	return c.checkSchema(table, d.Table)
}

// checkSchema is checkTable's test of a description.
func (c *claims) checkSchema(table string, t *types.TableDescription) error {
	if t == nil {
		return nil
	}
	a := c.names()
	kinds := map[string]types.ScalarAttributeType{}
	for _, d := range t.AttributeDefinitions {
		kinds[aws.ToString(d.AttributeName)] = d.AttributeType
	}
	var hash, sort string
	for _, k := range t.KeySchema {
		switch k.KeyType {
		case "HASH":
			hash = aws.ToString(k.AttributeName)
		case "RANGE":
			sort = aws.ToString(k.AttributeName)
		}
	}
	key := func(hash, sort string) string {
		s := fmt.Sprintf("%s (%s)", hash, kinds[hash])
		if sort != "" {
			s += fmt.Sprintf(" and sort key %s (%s)", sort, kinds[sort])
		}
		return s
	}
	want := a.Key + " (S)"
	if a.SortKey != "" {
		want += " and sort key " + a.SortKey + " (S)"
	}
	if hash == a.Key && kinds[hash] == "S" && sort == a.SortKey && (sort == "" || kinds[sort] == "S") {
		return nil
	}
	return failf("%s is not a processed-ids table: its key is %s, and the Store keys its claims by %s. The processed-ids table is the stack's ProcessedTableName output (make local: idem-local-ProcessedTable); a Store with attribute names of its own needs -attr key=NAME and -sort-key",
		table, key(hash, sort), want)
}

// decode reads a stored item as the Store does.
func (c *claims) decode(item map[string]types.AttributeValue) (*claim, error) {
	if s, ok := item[wire.KindAttr].(*types.AttributeValueMemberS); ok && s.Value == wire.Kind {
		return nil, errOutboxItem
	}
	cl := &claim{Record: adapt.Core(c.store).Decode(item), item: item}
	if s, ok := item[c.names().LeaseID].(*types.AttributeValueMemberS); ok {
		cl.leaseID = s.Value
	}
	return cl, nil
}

// outboxItem is a message an effect sent through the outbox, as its item
// holds it until the relay sent it and TTL deleted it.
type outboxItem struct {
	Index       int               `json:"index"`
	ID          string            `json:"id"`
	Destination string            `json:"destination"`
	Type        string            `json:"type,omitempty"`
	GroupID     string            `json:"groupId,omitempty"`
	Attributes  map[string]string `json:"attributes,omitempty"`
	Body        string            `json:"body"`
	CreatedAt   string            `json:"createdAt,omitempty"`
	ExpiresAt   time.Time         `json:"expiresAt,omitzero"`
}

// maxOutbox bounds the lookup: a transaction holds at most 100 actions.
const maxOutbox = 100

// outbox reads the outbox items committed with cl: the ids the Store gave
// them (wire.ID of the table, the key, the claim's time and the index),
// from index 0 until one is missing. A Pending claim has sent none yet.
func (c *claims) outbox(ctx context.Context, cl *claim) ([]outboxItem, error) {
	if cl.Outcome == idem.Pending || cl.ClaimedAt.IsZero() {
		return nil, nil
	}
	var items []outboxItem
	for i := range maxOutbox {
		id := wire.ID(c.table, cl.Key, cl.ClaimedAt, i)
		var out *dynamodb.GetItemOutput
		err := retry(ctx, "GetItem outbox item "+id, func() (err error) {
			out, err = c.db.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(c.outboxTable),
				Key: c.keyItem(adapt.Core(c.store).OutboxKey(id)), ConsistentRead: aws.Bool(true)})
			return err
		})
		if err != nil {
			return items, c.keyErr(ctx, fmt.Sprintf("GetItem outbox item %s in", id), c.outboxTable, err)
		}
		if out.Item == nil {
			break
		}
		items = append(items, c.outboxItem(out.Item, i, id))
	}
	return items, nil
}

func (c *claims) outboxItem(it map[string]types.AttributeValue, i int, id string) outboxItem {
	str := func(name string) string {
		if s, ok := it[name].(*types.AttributeValueMemberS); ok {
			return s.Value
		}
		return ""
	}
	m := outboxItem{Index: i, ID: id, Destination: str(wire.DestinationAttr), Type: str(wire.TypeAttr), GroupID: str(wire.GroupAttr),
		Body: str(wire.BodyAttr), CreatedAt: str(wire.CreatedAtAttr)}
	if a, ok := it[wire.AttributesAttr].(*types.AttributeValueMemberM); ok {
		m.Attributes = map[string]string{}
		for k, v := range a.Value {
			if s, ok := v.(*types.AttributeValueMemberS); ok {
				m.Attributes[k] = s.Value
			}
		}
	}
	if n, ok := it[c.names().ExpiresAt].(*types.AttributeValueMemberN); ok {
		if sec, err := strconv.ParseInt(n.Value, 10, 64); err == nil {
			m.ExpiresAt = time.Unix(sec, 0).UTC()
		}
	}
	return m
}

// isCode says whether err is the AWS error code.
func isCode(err error, code string) bool {
	var ae smithy.APIError
	return errors.As(err, &ae) && ae.ErrorCode() == code
}
