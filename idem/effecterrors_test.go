package idem_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemkit/kit/idem"
)

// TestEffectErrorsNameTheirWrite: every error about an effect's write
// names the write's index and its table, whether the kit refuses it
// before sending or DynamoDB refuses it in its cancellation (whose own
// message names no table).
func TestEffectErrorsNameTheirWrite(t *testing.T) {
	e := newEnv(t)
	s := func(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
	wrongKey, err := idem.Update(e.accounts, map[string]string{"id": "acc-1"}, expression.Add(expression.Name("balance"), expression.Value(1)))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		writes []types.TransactWriteItem
		want   string
		sent   bool // DynamoDB refuses it, not the kit
	}{
		{name: "a key that does not match the table's schema", writes: []types.TransactWriteItem{e.credit("acc-1", 1), wrongKey}, want: "effect write 1 on " + e.accounts + ": ", sent: true},
		{name: "an update without its expression", writes: []types.TransactWriteItem{{Update: &types.Update{TableName: aws.String(e.accounts), Key: map[string]types.AttributeValue{"account": s("a")}}}}, want: "effect write 0 on " + e.accounts + ": Update without an UpdateExpression"},
		{name: "an item over 400 KB", writes: []types.TransactWriteItem{{Put: &types.Put{TableName: aws.String(e.accounts), Item: map[string]types.AttributeValue{"account": s("x"), "blob": &types.AttributeValueMemberB{Value: make([]byte, 401<<10)}}}}}, want: "effect write 0 on " + e.accounts + " puts an item of"},
		{name: "a put without its key attributes", writes: []types.TransactWriteItem{e.credit("acc-1", 1), {Put: &types.Put{TableName: aws.String(e.accounts), Item: map[string]types.AttributeValue{"owner": s("ada")}}}}, want: "effect write 1 on " + e.accounts + " puts an item without its key attributes"},
		{name: "an empty key value", writes: []types.TransactWriteItem{e.credit("", 1)}, want: "effect write 0 on " + e.accounts + `: key attribute "account" is empty`},
		{name: "a write on the claim record", writes: []types.TransactWriteItem{{Delete: &types.Delete{TableName: aws.String(e.processed), Key: map[string]types.AttributeValue{"pk": s("credits#evt_001")}}}}, want: "effect write 0 on " + e.processed + " is on the claim record itself"},
		{name: "a nil attribute value", writes: []types.TransactWriteItem{e.credit("acc-1", 1), {Delete: &types.Delete{TableName: aws.String(e.accounts), Key: map[string]types.AttributeValue{"account": (*types.AttributeValueMemberS)(nil)}}}}, want: "effect write 1 on " + e.accounts + " holds a value DynamoDB cannot take"},
		{name: "two writes on one item", writes: []types.TransactWriteItem{e.credit("acc-1", 1), e.debit("acc-1", 1)}, want: "effect writes 0 and 1 are on the same item of " + e.accounts},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e.calls.Reset()
			_, err := e.store.Process(context.Background(), msg, func(context.Context, idem.Message) (idem.Effect, error) {
				return idem.Effect{Writes: tc.writes}, nil
			})
			if !errors.Is(err, idem.ErrInvalid) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("want an invalid error saying %q, got %v", tc.want, err)
			}
			if got, want := e.calls.Count("") > 0, tc.sent; got != want {
				t.Errorf("sent to DynamoDB: want %v, got %v", want, got)
			}
		})
	}
	if n := e.claimCount(t); n != 0 {
		t.Errorf("the refused effects left %d claim(s)", n)
	}
}
