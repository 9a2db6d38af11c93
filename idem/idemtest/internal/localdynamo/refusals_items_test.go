package localdynamo_test

// Part of the conformance test (see refusals_test.go): single-item
// requests and tables.

import (
	"context"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemkit/kit/idem/idemtest"
)

func idemClient(t *testing.T) *dynamodb.Client { return idemtest.Client(idemtest.Endpoint(t)) }

func newTable(t *testing.T, c *dynamodb.Client, name string) string {
	return idemtest.CreateTable(t, c, idemtest.Table{Name: name, HashKey: "pk"})
}

func TestRefusesAttributeValues(t *testing.T) {
	c := idemClient(t)
	tbl := newTable(t, c, "refuse-values")
	putV := func(v types.AttributeValue) func(context.Context) error {
		return func(ctx context.Context) error {
			_, err := c.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(tbl), Item: map[string]types.AttributeValue{"pk": s("a"), "v": v}})
			return err
		}
	}
	raw := func(item string) func(context.Context) error {
		return func(ctx context.Context) error {
			return rawCall(ctx, c, "PutItem", `{"TableName":"`+tbl+`","Item":{"pk":{"S":"a"},"v":`+item+`}}`)
		}
	}
	runRefusals(t, c, []string{tbl}, []refusal{
		{"a string set with duplicates", "ValidationException", putV(ss("a", "a"))},
		{"a number set with duplicates", "ValidationException", putV(&types.AttributeValueMemberNS{Value: []string{"1", "1"}})},
		{"a binary set with duplicates", "ValidationException", putV(&types.AttributeValueMemberBS{Value: [][]byte{[]byte("a"), []byte("a")}})},
		{"an empty binary set", "ValidationException", putV(&types.AttributeValueMemberBS{Value: [][]byte{}})},
		{"an empty string set in a list", "ValidationException", putV(&types.AttributeValueMemberL{Value: []types.AttributeValue{ss()}})},
		{"a number of 39 digits", "ValidationException", putV(n39())},
		{"a number over 1E+126", "ValidationException", putV(&types.AttributeValueMemberN{Value: "1E+126"})},
		{"a number under 1E-130", "ValidationException", putV(&types.AttributeValueMemberN{Value: "1E-131"})},
		{"NULL false", "ValidationException", putV(&types.AttributeValueMemberNULL{Value: false})},
		{"a value of no type", "ValidationException", raw(`{}`)},
		{"a value of two types", "ValidationException", raw(`{"S":"a","N":"1"}`)},
		{"a duplicate in ExpressionAttributeValues", "ValidationException", func(ctx context.Context) error {
			_, err := c.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: aws.String(tbl), Key: key("a"),
				UpdateExpression: aws.String("ADD v :v"), ExpressionAttributeValues: map[string]types.AttributeValue{":v": ss("x", "x")}})
			return err
		}},
	})
}

func n39() types.AttributeValue {
	return &types.AttributeValueMemberN{Value: "123456789012345678901234567890123456789"}
}

func TestRefusesExpressionsBesideLegacyParameters(t *testing.T) {
	c := idemClient(t)
	tbl := newTable(t, c, "refuse-expr")
	absent := map[string]types.ExpectedAttributeValue{"pk": {Exists: aws.Bool(false)}}
	cond := aws.String("attribute_not_exists(pk)")
	runRefusals(t, c, []string{tbl}, []refusal{
		{"PutItem ConditionExpression and Expected", "ValidationException", func(ctx context.Context) error {
			_, err := c.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(tbl), Item: key("a"), ConditionExpression: cond, Expected: absent})
			return err
		}},
		{"DeleteItem ConditionExpression and Expected", "ValidationException", func(ctx context.Context) error {
			_, err := c.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String(tbl), Key: key("a"), ConditionExpression: cond, Expected: absent})
			return err
		}},
		{"UpdateItem UpdateExpression and Expected", "ValidationException", func(ctx context.Context) error {
			_, err := c.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: aws.String(tbl), Key: key("a"),
				UpdateExpression: aws.String("SET v = :v"), ExpressionAttributeValues: map[string]types.AttributeValue{":v": n(1)}, Expected: absent})
			return err
		}},
		{"UpdateItem UpdateExpression and AttributeUpdates", "ValidationException", func(ctx context.Context) error {
			_, err := c.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: aws.String(tbl), Key: key("a"),
				UpdateExpression: aws.String("SET v = :v"), ExpressionAttributeValues: map[string]types.AttributeValue{":v": n(1)},
				AttributeUpdates: map[string]types.AttributeValueUpdate{"w": {Value: n(2), Action: types.AttributeActionPut}}})
			return err
		}},
		{"GetItem ProjectionExpression and AttributesToGet", "ValidationException", func(ctx context.Context) error {
			_, err := c.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(tbl), Key: key("a"), ProjectionExpression: aws.String("pk"), AttributesToGet: []string{"pk"}})
			return err
		}},
		{"ExpressionAttributeValues without an expression", "ValidationException", func(ctx context.Context) error {
			_, err := c.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(tbl), Item: key("a"), ExpressionAttributeValues: map[string]types.AttributeValue{":v": n(1)}})
			return err
		}},
		{"an unused ExpressionAttributeValues entry", "ValidationException", func(ctx context.Context) error {
			_, err := c.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(tbl), Item: key("a"), ConditionExpression: cond,
				ExpressionAttributeValues: map[string]types.AttributeValue{":v": n(1)}})
			return err
		}},
		{"AttributeUpdates on the key", "ValidationException", func(ctx context.Context) error {
			_, err := c.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: aws.String(tbl), Key: key("a"),
				AttributeUpdates: map[string]types.AttributeValueUpdate{"pk": {Value: s("b"), Action: types.AttributeActionPut}}})
			return err
		}},
		{"an unknown ReturnValuesOnConditionCheckFailure", "ValidationException", func(ctx context.Context) error {
			_, err := c.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: aws.String(tbl), Key: key("a"),
				UpdateExpression: aws.String("SET v = :v"), ExpressionAttributeValues: map[string]types.AttributeValue{":v": n(1)},
				ReturnValuesOnConditionCheckFailure: "BOGUS"})
			return err
		}},
	})
}

func TestRefusesBadTableNamesAndKeys(t *testing.T) {
	c := idemClient(t)
	tbl := newTable(t, c, "refuse-keys")
	getFrom := func(name string) func(context.Context) error {
		return func(ctx context.Context) error {
			_, err := c.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(name), Key: key("a")})
			return err
		}
	}
	create := func(name string, schema ...types.KeySchemaElement) func(context.Context) error {
		return func(ctx context.Context) error {
			if schema == nil {
				schema = []types.KeySchemaElement{{AttributeName: aws.String("pk"), KeyType: types.KeyTypeHash}}
			}
			_, err := c.CreateTable(ctx, &dynamodb.CreateTableInput{TableName: aws.String(name), BillingMode: types.BillingModePayPerRequest,
				AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("pk"), AttributeType: types.ScalarAttributeTypeS}},
				KeySchema:            schema})
			if err == nil { // a server that made it: leave nothing behind
				_, _ = c.DeleteTable(ctx, &dynamodb.DeleteTableInput{TableName: aws.String(name)})
			}
			return err
		}
	}
	wrongType := map[string]types.AttributeValue{"pk": n(1)}
	runRefusals(t, c, nil, []refusal{
		{"GetItem a name of 2 characters", "ValidationException", getFrom("ab")},
		{"GetItem a name with a space", "ValidationException", getFrom("a b")},
		{"GetItem a name of 256 characters", "ValidationException", getFrom(strings.Repeat("a", 256))},
		{"CreateTable a name of 2 characters", "ValidationException", create("ab")},
		{"CreateTable a name with a semicolon", "ValidationException", create("bad;name")},
		{"CreateTable a name of 256 characters", "ValidationException", create(strings.Repeat("a", 256))},
		{"CreateTable one attribute as two keys", "ValidationException", create("localdynamo-dupkey",
			types.KeySchemaElement{AttributeName: aws.String("pk"), KeyType: types.KeyTypeHash},
			types.KeySchemaElement{AttributeName: aws.String("pk"), KeyType: types.KeyTypeRange})},
		{"GetItem a key of the wrong type", "ValidationException", func(ctx context.Context) error {
			_, err := c.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(tbl), Key: wrongType})
			return err
		}},
		{"DeleteItem a key of the wrong type", "ValidationException", func(ctx context.Context) error {
			_, err := c.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String(tbl), Key: wrongType})
			return err
		}},
		{"GetItem a key with an extra attribute", "ValidationException", func(ctx context.Context) error {
			_, err := c.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(tbl), Key: map[string]types.AttributeValue{"pk": s("a"), "x": s("b")}})
			return err
		}},
	})
}

func TestTimeToLiveRules(t *testing.T) {
	c := idemClient(t)
	withTTL := idemtest.CreateTable(t, c, idemtest.Table{Name: "ttl-rules", HashKey: "pk", TTLAttribute: "expiresAt"})
	plain := newTable(t, c, "ttl-rules-plain")
	update := func(table, attr string, enabled bool) func(context.Context) error {
		return func(ctx context.Context) error {
			_, err := c.UpdateTimeToLive(ctx, &dynamodb.UpdateTimeToLiveInput{TableName: aws.String(table),
				TimeToLiveSpecification: &types.TimeToLiveSpecification{AttributeName: aws.String(attr), Enabled: aws.Bool(enabled)}})
			return err
		}
	}
	runRefusals(t, c, nil, []refusal{
		{"UpdateTimeToLive on a missing table", "ResourceNotFoundException", update(missingTable(), "expiresAt", true)},
		{"DescribeTimeToLive on a missing table", "ResourceNotFoundException", func(ctx context.Context) error {
			_, err := c.DescribeTimeToLive(ctx, &dynamodb.DescribeTimeToLiveInput{TableName: aws.String(missingTable())})
			return err
		}},
		{"an empty attribute name", "ValidationException", update(plain, "", true)},
		{"enabled twice", "ValidationException", update(withTTL, "expiresAt", true)},
		{"disabled within the hour", "ValidationException", update(withTTL, "expiresAt", false)},
	})
}
