package idemtest

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemkit/kit/idem"
	"github.com/idemkit/kit/idem/internal/wire"
)

// Number reads the number attribute attr of the item whose string partition
// key keyAttr is keyValue, with a consistent read: 0 when the item or the
// attribute is absent, such as the balance of an account never credited.
func Number(tb testing.TB, client *dynamodb.Client, table, keyAttr, keyValue, attr string) int64 {
	tb.Helper()
	out, err := client.GetItem(context.Background(), &dynamodb.GetItemInput{
		TableName: aws.String(table), ConsistentRead: aws.Bool(true),
		Key: map[string]types.AttributeValue{keyAttr: &types.AttributeValueMemberS{Value: keyValue}},
	})
	if err != nil {
		tb.Fatalf("idemtest: get %s %s=%s: %v", table, keyAttr, keyValue, err)
	}
	n, ok := out.Item[attr].(*types.AttributeValueMemberN)
	if !ok {
		return 0
	}
	v, err := strconv.ParseInt(n.Value, 10, 64)
	if err != nil {
		tb.Fatalf("idemtest: %s of %s=%s is %q, not a whole number", attr, keyAttr, keyValue, n.Value)
	}
	return v
}

// ItemCount counts the items of table with a consistent Scan, every page.
func ItemCount(tb testing.TB, client *dynamodb.Client, table string) int {
	tb.Helper()
	n := 0
	p := dynamodb.NewScanPaginator(client, &dynamodb.ScanInput{TableName: aws.String(table), ConsistentRead: aws.Bool(true), Select: types.SelectCount})
	for p.HasMorePages() {
		out, err := p.NextPage(context.Background())
		if err != nil {
			tb.Fatalf("idemtest: scan %s: %v", table, err)
		}
		n += int(out.Count)
	}
	return n
}

// OutboxItems reads the outbox items of table (idem.Effect.Messages, as
// written in the claims' transactions), every page, with a consistent
// Scan, keyed by their outbox id.
func OutboxItems(tb testing.TB, client *dynamodb.Client, table string) map[string]map[string]types.AttributeValue {
	tb.Helper()
	items := map[string]map[string]types.AttributeValue{}
	scan(tb, client, table, func(it map[string]types.AttributeValue) {
		kind, _ := it[wire.KindAttr].(*types.AttributeValueMemberS)
		idAttr, _ := it[wire.IDAttr].(*types.AttributeValueMemberS)
		if kind != nil && kind.Value == wire.Kind && idAttr != nil {
			items[idAttr.Value] = it
		}
	})
	return items
}

// OutboxMessage is an outgoing message as the outbox holds it, waiting
// for the relay.
type OutboxMessage struct {
	idem.OutgoingMessage // GroupID as the relay sends it: the claim key when the effect left it empty
	// ID is the id the relay sends it under (an SQS message's
	// IdempotencyKey attribute, an EventBridge detail's idempotencyKey).
	ID string
	// ClaimKey is the claim key of the message whose effect sent it, and
	// Index its place in that effect's Messages.
	ClaimKey string
	Index    int
}

// Outbox reads the outgoing messages waiting in table's outbox, sorted
// by claim key, then index.
func Outbox(tb testing.TB, client *dynamodb.Client, table string) []OutboxMessage {
	tb.Helper()
	var out []OutboxMessage
	for _, it := range OutboxItems(tb, client, table) {
		var m OutboxMessage
		attr := func(name string) string {
			v, _ := it[name].(*types.AttributeValueMemberS)
			if v == nil {
				return ""
			}
			return v.Value
		}
		m.ID, m.ClaimKey = attr(wire.IDAttr), attr(wire.ClaimAttr)
		m.Destination, m.Type, m.Body, m.GroupID = attr(wire.DestinationAttr), attr(wire.TypeAttr), attr(wire.BodyAttr), attr(wire.GroupAttr)
		if n, ok := it[wire.IndexAttr].(*types.AttributeValueMemberN); ok {
			m.Index, _ = strconv.Atoi(n.Value)
		}
		if a, ok := it[wire.AttributesAttr].(*types.AttributeValueMemberM); ok {
			m.Attributes = map[string]string{}
			for k, v := range a.Value {
				if s, ok := v.(*types.AttributeValueMemberS); ok {
					m.Attributes[k] = s.Value
				}
			}
		}
		out = append(out, m)
	}
	slices.SortFunc(out, func(a, b OutboxMessage) int {
		return cmp.Or(strings.Compare(a.ClaimKey, b.ClaimKey), a.Index-b.Index)
	})
	return out
}

// ClaimCount counts the claim records of table, leaving out the outbox
// items that share it.
func ClaimCount(tb testing.TB, client *dynamodb.Client, table string) int {
	tb.Helper()
	n := 0
	scan(tb, client, table, func(it map[string]types.AttributeValue) {
		if kind, _ := it[wire.KindAttr].(*types.AttributeValueMemberS); kind == nil || kind.Value != wire.Kind {
			n++
		}
	})
	return n
}

// scan calls fn on each item of table, every page, with a consistent Scan.
func scan(tb testing.TB, client *dynamodb.Client, table string, fn func(map[string]types.AttributeValue)) {
	tb.Helper()
	p := dynamodb.NewScanPaginator(client, &dynamodb.ScanInput{TableName: aws.String(table), ConsistentRead: aws.Bool(true)})
	for p.HasMorePages() {
		out, err := p.NextPage(context.Background())
		if err != nil {
			tb.Fatalf("idemtest: scan %s: %v", table, err)
		}
		for _, it := range out.Items {
			fn(it)
		}
	}
}

// CheckJSONRoundTrip decodes raw into v, refusing fields v's type does not
// have, encodes v again and fails the test if any member of raw is lost or
// changed: an event file must survive aws-lambda-go's own types.
func CheckJSONRoundTrip(tb testing.TB, raw []byte, v any) {
	tb.Helper()
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		tb.Fatalf("idemtest: decode into %T: %v", v, err)
	}
	out, err := json.Marshal(v)
	if err != nil {
		tb.Fatal(err)
	}
	var want, got any
	if err := json.Unmarshal(raw, &want); err != nil {
		tb.Fatal(err)
	}
	if err := json.Unmarshal(out, &got); err != nil {
		tb.Fatal(err)
	}
	if diff := lost(want, got, "$"); diff != "" {
		tb.Errorf("idemtest: the round trip through %T lost %s", v, diff)
	}
}

// lost names the first member of want that got lacks or holds differently.
func lost(want, got any, path string) string {
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			return path
		}
		for k, v := range w {
			if d := lost(v, g[k], path+"."+k); d != "" {
				return d
			}
		}
		return ""
	case []any:
		g, ok := got.([]any)
		if !ok || len(g) != len(w) {
			return path
		}
		for i := range w {
			if d := lost(w[i], g[i], fmt.Sprintf("%s[%d]", path, i)); d != "" {
				return d
			}
		}
		return ""
	}
	if got == nil && (want == nil || want == false || want == "" || want == 0.0) {
		return "" // omitempty: a zero value is left out
	}
	if !reflect.DeepEqual(want, got) {
		return fmt.Sprintf("%s (%v, got %v)", path, want, got)
	}
	return ""
}
