package localdynamo_test

// Part of the conformance test (see refusals_test.go): requests DynamoDB
// answers that moto refused or answered otherwise.

import (
	"context"
	"fmt"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// TestProjectionsWithListIndexes: a ProjectionExpression path may index a
// list (#l[1]); the answer keeps the named elements, in index order.
func TestProjectionsWithListIndexes(t *testing.T) {
	c := idemClient(t)
	tbl := newTable(t, c, "projection")
	ctx := context.Background()
	item := map[string]types.AttributeValue{
		"pk": s("p"),
		"l":  &types.AttributeValueMemberL{Value: []types.AttributeValue{s("zero"), s("one"), s("two")}},
		"m":  &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{"n": s("deep"), "o": s("other")}},
	}
	if _, err := c.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(tbl), Item: item}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		projection string
		names      map[string]string
		want       map[string]any
	}{
		{"#l[1]", map[string]string{"#l": "l"}, map[string]any{"l": []any{"one"}}},
		{"#l[2], #l[0]", map[string]string{"#l": "l"}, map[string]any{"l": []any{"zero", "two"}}},
		{"#m.#n, l[1]", map[string]string{"#m": "m", "#n": "n"}, map[string]any{"l": []any{"one"}, "m": map[string]any{"n": "deep"}}},
	} {
		t.Run(tc.projection, func(t *testing.T) {
			got, err := c.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(tbl), Key: key("p"), ConsistentRead: aws.Bool(true),
				ProjectionExpression: aws.String(tc.projection), ExpressionAttributeNames: tc.names})
			if err != nil {
				t.Fatalf("GetItem: %v", err)
			}
			wantItem(t, "GetItem", got.Item, tc.want)
			tx, err := c.TransactGetItems(ctx, &dynamodb.TransactGetItemsInput{TransactItems: []types.TransactGetItem{{Get: &types.Get{
				TableName: aws.String(tbl), Key: key("p"), ProjectionExpression: aws.String(tc.projection), ExpressionAttributeNames: tc.names}}}})
			if err != nil {
				t.Fatalf("TransactGetItems: %v", err)
			}
			wantItem(t, "TransactGetItems", tx.Responses[0].Item, tc.want)
		})
	}
	t.Run("AttributesToGet", func(t *testing.T) {
		got, err := c.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(tbl), Key: key("p"), AttributesToGet: []string{"m"}})
		if err != nil {
			t.Fatalf("GetItem: %v", err)
		}
		wantItem(t, "GetItem", got.Item, map[string]any{"m": map[string]any{"n": "deep", "o": "other"}})
	})
}

func wantItem(t *testing.T, op string, item map[string]types.AttributeValue, want map[string]any) {
	t.Helper()
	var got map[string]any
	if err := attributevalue.UnmarshalMap(item, &got); err != nil {
		t.Fatalf("%s: %v", op, err)
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("%s: want %v, got %v", op, want, got)
	}
}

// TestAcceptsWhatDynamoDBAccepts: 100 gets in one TransactGetItems (moto
// took 25), and one key in two tables of one BatchWriteItem (moto called it
// a duplicate).
func TestAcceptsWhatDynamoDBAccepts(t *testing.T) {
	c := idemClient(t)
	one, two := newTable(t, c, "accept-one"), newTable(t, c, "accept-two")
	ctx := context.Background()
	_, err := c.BatchWriteItem(ctx, &dynamodb.BatchWriteItemInput{RequestItems: map[string][]types.WriteRequest{
		one: {{PutRequest: &types.PutRequest{Item: key("same")}}},
		two: {{PutRequest: &types.PutRequest{Item: key("same")}}},
	}})
	if err != nil {
		t.Errorf("one key in two tables: %v", err)
	}
	var gets []types.TransactGetItem
	for i := range 100 {
		gets = append(gets, types.TransactGetItem{Get: &types.Get{TableName: aws.String(one), Key: key(fmt.Sprintf("g-%d", i))}})
	}
	out, err := c.TransactGetItems(ctx, &dynamodb.TransactGetItemsInput{TransactItems: gets})
	if err != nil {
		t.Fatalf("100 gets: %v", err)
	}
	if len(out.Responses) != 100 {
		t.Errorf("100 gets: want 100 responses, got %d", len(out.Responses))
	}
}
