package idem

import (
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// TestIncrementOf: an Update is an increment when it only adds numbers,
// with no condition, as idem.Update builds one with expression.Add.
func TestIncrementOf(t *testing.T) {
	key := map[string]string{"account": "a"}
	mustUpdate := func(up expression.UpdateBuilder, cond ...expression.ConditionBuilder) types.TransactWriteItem {
		w, err := Update("accounts", key, up, cond...)
		if err != nil {
			t.Fatal(err)
		}
		return w
	}
	add := expression.Add(expression.Name("balance"), expression.Value(500))
	for _, tc := range []struct {
		name string
		w    types.TransactWriteItem
		want map[string]string // nil: not an increment
	}{
		{"expression.Add", mustUpdate(add), map[string]string{"balance": "500"}},
		{"two attributes", mustUpdate(add.Add(expression.Name("credits"), expression.Value(1))), map[string]string{"balance": "500", "credits": "1"}},
		{"a decimal", mustUpdate(expression.Add(expression.Name("b"), expression.Value(-1.25))), map[string]string{"b": "-1.25"}},
		{"with a condition", mustUpdate(add, expression.Name("balance").GreaterThan(expression.Value(0))), nil},
		{"a SET", mustUpdate(expression.Set(expression.Name("note"), expression.Value("x"))), nil},
		{"a set's ADD", mustUpdate(expression.Add(expression.Name("tags"), expression.Value(&types.AttributeValueMemberSS{Value: []string{"x"}}))), nil},
		{"a nested path", mustUpdate(expression.Add(expression.Name("totals.day"), expression.Value(1))), nil},
		{"an exponent", types.TransactWriteItem{Update: &types.Update{TableName: aws.String("t"), Key: map[string]types.AttributeValue{"k": &types.AttributeValueMemberS{Value: "a"}},
			UpdateExpression: aws.String("ADD n :v"), ExpressionAttributeValues: map[string]types.AttributeValue{":v": &types.AttributeValueMemberN{Value: "1E3"}}}}, nil},
		{"a plain name", types.TransactWriteItem{Update: &types.Update{TableName: aws.String("t"), Key: map[string]types.AttributeValue{"k": &types.AttributeValueMemberS{Value: "a"}},
			UpdateExpression: aws.String("add n :v"), ExpressionAttributeValues: map[string]types.AttributeValue{":v": &types.AttributeValueMemberN{Value: "7"}}}}, map[string]string{"n": "7"}},
		{"a Put", types.TransactWriteItem{Put: &types.Put{TableName: aws.String("t")}}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			inc := incrementOf(tc.w)
			if tc.want == nil {
				if inc != nil {
					t.Errorf("want no increment, got %v", inc)
				}
				return
			}
			if len(inc) != len(tc.want) {
				t.Fatalf("want %v, got %v", tc.want, inc)
			}
			for name, v := range tc.want {
				if got, _ := inc[name].format(); got != v {
					t.Errorf("%s: want %s, got %s", name, v, got)
				}
			}
		})
	}
}

// TestMergeIncrements: increments of one item add up exactly, at the
// largest scale, into one Update; past DynamoDB's 38 digits they do not
// merge.
func TestMergeIncrements(t *testing.T) {
	inc := func(vs ...string) increment {
		out := increment{}
		for i := 0; i < len(vs); i += 2 {
			d, ok := parseDecimal(vs[i+1])
			if !ok {
				t.Fatalf("%q is no decimal", vs[i+1])
			}
			out[vs[i]] = d
		}
		return out
	}
	w, err := Update("accounts", map[string]string{"account": "a"}, expression.Add(expression.Name("balance"), expression.Value(1)))
	if err != nil {
		t.Fatal(err)
	}
	merged, ok := mergeIncrements(w, []increment{inc("balance", "1.5", "n", "1"), inc("balance", "-0.25"), inc("balance", "10", "n", "2")})
	if !ok {
		t.Fatal("want a merge")
	}
	got := incrementOf(merged)
	for name, want := range map[string]string{"balance": "11.25", "n": "3"} {
		if v, _ := got[name].format(); v != want {
			t.Errorf("%s: want %s, got %s (%v)", name, want, v, aws.ToString(merged.Update.UpdateExpression))
		}
	}
	if merged.Update.ConditionExpression != nil || aws.ToString(merged.Update.TableName) != "accounts" {
		t.Errorf("want the item's table and no condition, got %+v", merged.Update)
	}
	big := "99999999999999999999999999999999999999" // 38 nines
	if _, ok := mergeIncrements(w, []increment{inc("b", big), inc("b", "1")}); ok {
		t.Error("want no merge past 38 digits")
	}
	for _, tc := range []struct{ in, want string }{{"0.05", "0.05"}, {"-7", "-7"}, {"+3.10", "3.10"}, {"0", "0"}} {
		d, _ := parseDecimal(tc.in)
		if got, _ := d.format(); got != tc.want {
			t.Errorf("%s: want %s, got %s", tc.in, tc.want, got)
		}
	}
	for _, bad := range []string{"", ".", "1e3", "1.2.3", "--1", "x"} {
		if _, ok := parseDecimal(bad); ok {
			t.Errorf("%q: want no decimal", bad)
		}
	}
}
