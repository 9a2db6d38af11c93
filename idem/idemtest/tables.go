package idemtest

import (
	"context"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/idemkit/kit/idem"
	"github.com/idemkit/kit/idem/idemtest/internal/localdynamo"
	"github.com/idemkit/kit/idem/internal/wire"
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
	// Stream turns the table's stream on, with the NEW_IMAGE view, for a
	// consumer of it (StreamRecords, NewStreamReader).
	Stream bool
}

// CreateTable creates an on-demand table with a unique name, waits until it
// is active, and deletes it when the test ends. It returns the name.
func CreateTable(tb testing.TB, client *dynamodb.Client, t Table) string {
	tb.Helper()
	name, err := localdynamo.CreateTable(context.Background(), client, localdynamo.Table{
		Name: t.Name + "-" + sanitize(tb.Name()), HashKey: t.HashKey, RangeKey: t.RangeKey, TTLAttribute: t.TTLAttribute, Stream: t.Stream})
	if err != nil {
		tb.Fatalf("idemtest: %v", err)
	}
	tb.Cleanup(func() {
		_, _ = client.DeleteTable(context.Background(), &dynamodb.DeleteTableInput{TableName: aws.String(name)})
	})
	return name
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
	return CreateTable(tb, client, processedTable(optFns))
}

func processedTable(optFns []func(*idem.Options)) Table {
	var o idem.Options
	for _, fn := range optFns {
		fn(&o)
	}
	a := o.Attributes
	if a.Key == "" {
		a.Key = wire.ClaimKeyAttr
	}
	if a.ExpiresAt == "" {
		a.ExpiresAt = wire.ExpiresAtAttr
	}
	return Table{Name: "processed", HashKey: a.Key, RangeKey: a.SortKey, TTLAttribute: a.ExpiresAt}
}
