package idem

import (
	"fmt"

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
	av, err := attributevalue.MarshalMap(v)
	if err != nil {
		return nil, fmt.Errorf("idem: %s on %s: marshal the %s: %w", op, table, what, err)
	}
	if len(av) == 0 {
		return nil, fmt.Errorf("idem: %s on %s: the %s has no attributes", op, table, what)
	}
	return av, nil
}

// build is one expression of an update and at most one condition.
func build(op, table string, update *expression.UpdateBuilder, cond []expression.ConditionBuilder) (expression.Expression, error) {
	if len(cond) > 1 {
		return expression.Expression{}, fmt.Errorf("idem: %s on %s: %d conditions; join them with expression.And", op, table, len(cond))
	}
	b := expression.NewBuilder()
	if update != nil {
		b = b.WithUpdate(*update)
	}
	if len(cond) == 1 {
		b = b.WithCondition(cond[0])
	}
	expr, err := b.Build()
	if err != nil {
		return expression.Expression{}, fmt.Errorf("idem: %s on %s: %w", op, table, err)
	}
	return expr, nil
}
