package localdynamo_test

import (
	"context"
	"errors"
	"maps"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemkit/kit/idem/idemtest"
)

// TestCancelledTransactionRestoresTouchedItems checks that a cancelled
// transaction leaves every item it touched as it was (a new claim gone, an
// in-place update, a replacing put and a delete undone), that items it did
// not touch keep their value, and that the cancellation reasons and the
// ALL_OLD item are DynamoDB's.
func TestCancelledTransactionRestoresTouchedItems(t *testing.T) {
	c := idemtest.Client(idemtest.Endpoint(t))
	for _, kind := range []struct {
		name     string
		rangeKey string
	}{{"hash", ""}, {"hash+range", "sk"}} {
		key := func(id string) map[string]types.AttributeValue {
			k := map[string]types.AttributeValue{"pk": s(id)}
			if kind.rangeKey != "" {
				k["sk"] = s("r-" + id)
			}
			return k
		}
		item := func(id string, attrs map[string]types.AttributeValue) map[string]types.AttributeValue {
			it := key(id)
			maps.Copy(it, attrs)
			return it
		}
		failing := types.TransactWriteItem{ConditionCheck: &types.ConditionCheck{
			TableName: nil, Key: key("guard"),
			ConditionExpression:                 aws.String("v = :two"),
			ExpressionAttributeValues:           map[string]types.AttributeValue{":two": n(2)},
			ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
		}}
		for _, tc := range []struct {
			name      string
			failingAt int
		}{{"condition fails last", 4}, {"condition fails first", 0}} {
			t.Run(kind.name+"/"+tc.name, func(t *testing.T) {
				table := idemtest.CreateTable(t, c, idemtest.Table{Name: "rollback", HashKey: "pk", RangeKey: kind.rangeKey})
				ctx := context.Background()
				before := map[string]map[string]types.AttributeValue{
					"keep":  item("keep", map[string]types.AttributeValue{"v": n(10)}),
					"upd":   item("upd", map[string]types.AttributeValue{"v": n(1), "tags": &types.AttributeValueMemberSS{Value: []string{"a"}}}),
					"rep":   item("rep", map[string]types.AttributeValue{"v": s("old")}),
					"del":   item("del", map[string]types.AttributeValue{"v": s("here")}),
					"guard": item("guard", map[string]types.AttributeValue{"v": n(1)}),
				}
				for _, it := range before {
					if _, err := c.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(table), Item: it}); err != nil {
						t.Fatal(err)
					}
				}
				ops := []types.TransactWriteItem{
					{Put: &types.Put{TableName: aws.String(table), Item: item("new", map[string]types.AttributeValue{"v": n(1)}), ConditionExpression: aws.String("attribute_not_exists(pk)")}},
					{Update: &types.Update{TableName: aws.String(table), Key: key("upd"), UpdateExpression: aws.String("SET v = v + :five ADD tags :b"),
						ExpressionAttributeValues: map[string]types.AttributeValue{":five": n(5), ":b": &types.AttributeValueMemberSS{Value: []string{"b"}}}}},
					{Put: &types.Put{TableName: aws.String(table), Item: item("rep", map[string]types.AttributeValue{"v": s("new")})}},
					{Delete: &types.Delete{TableName: aws.String(table), Key: key("del")}},
				}
				f := failing
				cc := *f.ConditionCheck
				cc.TableName = aws.String(table)
				f.ConditionCheck = &cc
				ops = append(ops[:tc.failingAt], append([]types.TransactWriteItem{f}, ops[tc.failingAt:]...)...)

				_, err := c.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: ops})
				var tce *types.TransactionCanceledException
				if !errors.As(err, &tce) {
					t.Fatalf("want TransactionCanceledException, got %v", err)
				}
				if len(tce.CancellationReasons) != len(ops) {
					t.Fatalf("want %d cancellation reasons, got %d", len(ops), len(tce.CancellationReasons))
				}
				for i, r := range tce.CancellationReasons {
					want := "None"
					if i == tc.failingAt {
						want = "ConditionalCheckFailed"
					}
					if got := aws.ToString(r.Code); got != want {
						t.Errorf("reason %d: want %s, got %s", i, want, got)
					}
				}
				if old := tce.CancellationReasons[tc.failingAt].Item; !equalItems(old, before["guard"]) {
					t.Errorf("ALL_OLD item: want %v, got %v", before["guard"], old)
				}
				for id, want := range before {
					if got := get(t, c, table, key(id)); !equalItems(got, want) {
						t.Errorf("%s after rollback: want %v, got %v", id, want, got)
					}
				}
				if got := get(t, c, table, key("new")); got != nil {
					t.Errorf("claim survived the rollback: %v", got)
				}
			})
		}
	}
}

func get(t *testing.T, c *dynamodb.Client, table string, key map[string]types.AttributeValue) map[string]types.AttributeValue {
	t.Helper()
	out, err := c.GetItem(context.Background(), &dynamodb.GetItemInput{TableName: aws.String(table), Key: key, ConsistentRead: aws.Bool(true)})
	if err != nil {
		t.Fatalf("get %v: %v", key, err)
	}
	return out.Item
}

func equalItems(a, b map[string]types.AttributeValue) bool {
	if len(a) != len(b) {
		return false
	}
	for k, av := range a {
		if !equalValue(av, b[k]) {
			return false
		}
	}
	return true
}

func equalValue(a, b types.AttributeValue) bool {
	switch a := a.(type) {
	case *types.AttributeValueMemberS:
		b, ok := b.(*types.AttributeValueMemberS)
		return ok && a.Value == b.Value
	case *types.AttributeValueMemberN:
		b, ok := b.(*types.AttributeValueMemberN)
		return ok && a.Value == b.Value
	case *types.AttributeValueMemberSS:
		b, ok := b.(*types.AttributeValueMemberSS)
		if !ok || len(a.Value) != len(b.Value) {
			return false
		}
		seen := map[string]bool{}
		for _, v := range a.Value {
			seen[v] = true
		}
		for _, v := range b.Value {
			if !seen[v] {
				return false
			}
		}
		return true
	}
	return false
}
