package idemtest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemkit/kit/idem"
)

// Table describes a table for CreateTable. Key attributes are strings (S).
type Table struct {
	// Name is the table's name prefix; a unique suffix is added so tests
	// sharing one server never meet.
	Name string
	// HashKey is the partition key attribute.
	HashKey string
	// RangeKey is the sort key attribute, or "" for none.
	RangeKey string
	// TTLAttribute, when set, has TTL enabled on it.
	TTLAttribute string
}

var tableSeq atomic.Int64

// CreateTable creates an on-demand table with a unique name, waits until it
// is active, and deletes it when the test ends. It returns the name.
func CreateTable(tb testing.TB, client *dynamodb.Client, t Table) string {
	tb.Helper()
	t.Name += "-" + sanitize(tb.Name())
	name, err := MakeTable(context.Background(), client, t)
	if err != nil {
		tb.Fatalf("idemtest: %v", err)
	}
	tb.Cleanup(func() {
		_, _ = client.DeleteTable(context.Background(), &dynamodb.DeleteTableInput{TableName: aws.String(name)})
	})
	return name
}

// MakeTable is CreateTable for code without a testing.TB: the table stays
// until the server stops.
func MakeTable(ctx context.Context, client *dynamodb.Client, t Table) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	name := fmt.Sprintf("%s-%d-%d", t.Name, time.Now().UnixNano()%1e6, tableSeq.Add(1))
	if len(name) > 255 {
		name = name[len(name)-255:]
	}
	in := &dynamodb.CreateTableInput{
		TableName:   aws.String(name),
		BillingMode: types.BillingModePayPerRequest,
		AttributeDefinitions: []types.AttributeDefinition{
			{AttributeName: aws.String(t.HashKey), AttributeType: types.ScalarAttributeTypeS},
		},
		KeySchema: []types.KeySchemaElement{{AttributeName: aws.String(t.HashKey), KeyType: types.KeyTypeHash}},
	}
	if t.RangeKey != "" {
		in.AttributeDefinitions = append(in.AttributeDefinitions, types.AttributeDefinition{AttributeName: aws.String(t.RangeKey), AttributeType: types.ScalarAttributeTypeS})
		in.KeySchema = append(in.KeySchema, types.KeySchemaElement{AttributeName: aws.String(t.RangeKey), KeyType: types.KeyTypeRange})
	}
	// The name is this call's own, so "already exists" means the SDK
	// retried a CreateTable whose first answer was lost under load.
	var inUse *types.ResourceInUseException
	if _, err := client.CreateTable(ctx, in); err != nil && !errors.As(err, &inUse) {
		return "", fmt.Errorf("create table %s: %w", name, err)
	}
	if err := dynamodb.NewTableExistsWaiter(client).Wait(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(name)}, 2*time.Minute); err != nil {
		return "", fmt.Errorf("table %s not active: %w", name, err)
	}
	if t.TTLAttribute != "" {
		_, err := client.UpdateTimeToLive(ctx, &dynamodb.UpdateTimeToLiveInput{
			TableName:               aws.String(name),
			TimeToLiveSpecification: &types.TimeToLiveSpecification{AttributeName: aws.String(t.TTLAttribute), Enabled: aws.Bool(true)},
		})
		if err != nil {
			return "", fmt.Errorf("enable TTL on %s: %w", name, err)
		}
	}
	return name, nil
}

func sanitize(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_', r == '.':
			return r
		}
		return '_'
	}, s)
}

// ProcessedTable creates a processed-ids table keyed and TTL-enabled as a
// Store with the same options expects, and returns its name.
func ProcessedTable(tb testing.TB, client *dynamodb.Client, optFns ...func(*idem.Options)) string {
	tb.Helper()
	var o idem.Options
	for _, fn := range optFns {
		fn(&o)
	}
	a := o.Attributes
	if a.Key == "" {
		a.Key = idem.DefaultAttributes.Key
	}
	if a.ExpiresAt == "" {
		a.ExpiresAt = idem.DefaultAttributes.ExpiresAt
	}
	return CreateTable(tb, client, Table{Name: "processed", HashKey: a.Key, RangeKey: a.SortKey, TTLAttribute: a.ExpiresAt})
}
