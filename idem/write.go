package idem

import (
	"fmt"
	"reflect"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// The writes of an Effect, built the SDK's way: items and keys are Go
// values marshalled with attributevalue.MarshalMap (struct fields follow
// their `dynamodbav` tags), updates and conditions are expression builders,
// so no placeholder or AttributeValue is written by hand:
//
//	w, err := idem.Update("accounts", map[string]string{"account": "acc-9"},
//		expression.Add(expression.Name("balance"), expression.Value(500)))
//
// Each returns the marshalling's or the expression's error, which is the
// handler's mistake, not the message's.

// Put writes item, a Go value, into table, if cond holds when one is given.
func Put(table string, item any, cond ...expression.ConditionBuilder) (types.TransactWriteItem, error) {
	av, err := marshal("Put", table, "item", item)
	if err != nil {
		return types.TransactWriteItem{}, err
	}
	p := &types.Put{TableName: &table, Item: av}
	if len(cond) > 0 {
		expr, err := build("Put", table, nil, cond)
		if err != nil {
			return types.TransactWriteItem{}, err
		}
		p.ConditionExpression, p.ExpressionAttributeNames, p.ExpressionAttributeValues = expr.Condition(), expr.Names(), expr.Values()
	}
	return types.TransactWriteItem{Put: p}, nil
}

// Update applies update to the item of table whose key is key, a Go value
// holding the key attributes, if cond holds when one is given.
//
// An update that only adds numbers (expression.Add of numeric values,
// one attribute or several) with no condition is an increment: increments
// of one item commute, so ProcessBatch (and the batch adapters'
// BatchTransactions) carry several messages' increments of one item as
// one action, their sum, where DynamoDB would allow one action per item.
func Update(table string, key any, update expression.UpdateBuilder, cond ...expression.ConditionBuilder) (types.TransactWriteItem, error) {
	k, err := marshal("Update", table, "key", key)
	if err != nil {
		return types.TransactWriteItem{}, err
	}
	expr, err := build("Update", table, &update, cond)
	if err != nil {
		return types.TransactWriteItem{}, err
	}
	return types.TransactWriteItem{Update: &types.Update{
		TableName: &table, Key: k, UpdateExpression: expr.Update(), ConditionExpression: expr.Condition(),
		ExpressionAttributeNames: expr.Names(), ExpressionAttributeValues: expr.Values(),
	}}, nil
}

// Delete deletes the item of table whose key is key, if cond holds when
// one is given.
func Delete(table string, key any, cond ...expression.ConditionBuilder) (types.TransactWriteItem, error) {
	k, err := marshal("Delete", table, "key", key)
	if err != nil {
		return types.TransactWriteItem{}, err
	}
	d := &types.Delete{TableName: &table, Key: k}
	if len(cond) > 0 {
		expr, err := build("Delete", table, nil, cond)
		if err != nil {
			return types.TransactWriteItem{}, err
		}
		d.ConditionExpression, d.ExpressionAttributeNames, d.ExpressionAttributeValues = expr.Condition(), expr.Names(), expr.Values()
	}
	return types.TransactWriteItem{Delete: d}, nil
}

// ConditionCheck makes the effect depend on cond holding for the item of
// table whose key is key, without writing it.
func ConditionCheck(table string, key any, cond expression.ConditionBuilder) (types.TransactWriteItem, error) {
	k, err := marshal("ConditionCheck", table, "key", key)
	if err != nil {
		return types.TransactWriteItem{}, err
	}
	expr, err := build("ConditionCheck", table, nil, []expression.ConditionBuilder{cond})
	if err != nil {
		return types.TransactWriteItem{}, err
	}
	return types.TransactWriteItem{ConditionCheck: &types.ConditionCheck{
		TableName: &table, Key: k, ConditionExpression: expr.Condition(),
		ExpressionAttributeNames: expr.Names(), ExpressionAttributeValues: expr.Values(),
	}}, nil
}

func marshal(op, table, what string, v any) (map[string]types.AttributeValue, error) {
	av, err := attributevalue.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("idem: %s on %s: marshal the %s: %w", op, table, what, err)
	}
	// MarshalMap would give anything else an empty map, and so the error
	// "no attributes" for what is the wrong type: say which type it is.
	m, ok := av.(*types.AttributeValueMemberM)
	if !ok {
		want := "a map or a struct of the item's attributes"
		if what == "key" {
			want = `a map or a struct of the key attributes, such as map[string]string{"id": "acc-1"}`
		}
		return nil, fmt.Errorf("idem: %s on %s: the %s is %s; want %s", op, table, what, typeOf(v), want)
	}
	if len(m.Value) == 0 {
		return nil, fmt.Errorf("idem: %s on %s: the %s has no attributes", op, table, what)
	}
	return m.Value, nil
}

// typeOf names v's type for an error: "a string", "a nil *Key", "nil".
func typeOf(v any) string {
	rv := reflect.ValueOf(v)
	switch {
	case !rv.IsValid():
		return "nil"
	case rv.Kind() == reflect.Pointer && rv.IsNil():
		return fmt.Sprintf("a nil %T", v)
	}
	return fmt.Sprintf("a %T", v)
}

// build is one expression of an update and at most one condition. A zero
// builder is refused here, in the kit's words: the SDK would say only
// "buildTree error: unset parameter: UpdateBuilder".
func build(op, table string, update *expression.UpdateBuilder, cond []expression.ConditionBuilder) (expression.Expression, error) {
	if len(cond) > 1 {
		return expression.Expression{}, fmt.Errorf("idem: %s on %s: %d conditions; join them with expression.And", op, table, len(cond))
	}
	b := expression.NewBuilder()
	if update != nil {
		if reflect.ValueOf(*update).IsZero() {
			return expression.Expression{}, fmt.Errorf("idem: %s on %s: the update is empty (a zero expression.UpdateBuilder); build it with expression.Set, Add, Remove or Delete", op, table)
		}
		b = b.WithUpdate(*update)
	}
	if len(cond) == 1 {
		if !cond[0].IsSet() {
			return expression.Expression{}, fmt.Errorf("idem: %s on %s: the condition is empty (a zero expression.ConditionBuilder); build it with expression.Name(…).Equal(…) and the like, or pass none", op, table)
		}
		b = b.WithCondition(cond[0])
	}
	expr, err := b.Build()
	if err != nil {
		return expression.Expression{}, fmt.Errorf("idem: %s on %s: %w", op, table, err)
	}
	return expr, nil
}
