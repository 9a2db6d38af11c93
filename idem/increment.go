package idem

import (
	"math/big"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// An increment is an Update that only adds numbers to attributes of one
// item, with no condition: what idem.Update(table, key,
// expression.Add(expression.Name("balance"), expression.Value(500)))
// builds. Increments of one item commute, so a batch transaction carries
// several messages' increments of one item as one action, their sum
// (DynamoDB allows one action per item), each message's claim beside it:
// ten credits to one account in one transaction of eleven actions.

// increment is an Update's amounts by attribute name, in decimal.
type increment map[string]decimal

// incrementOf reads w as an increment, or nil when it is not one.
func incrementOf(w types.TransactWriteItem) increment {
	u := w.Update
	if u == nil || aws.ToString(u.ConditionExpression) != "" {
		return nil
	}
	expr := strings.TrimSpace(aws.ToString(u.UpdateExpression))
	if len(expr) < 4 || !strings.EqualFold(expr[:4], "ADD ") {
		return nil
	}
	inc := increment{}
	for _, clause := range strings.Split(expr[4:], ",") {
		parts := strings.Fields(clause)
		if len(parts) != 2 {
			return nil
		}
		name, ok := attrName(parts[0], u.ExpressionAttributeNames)
		n, isN := u.ExpressionAttributeValues[parts[1]].(*types.AttributeValueMemberN)
		if !ok || !isN {
			return nil
		}
		d, ok := parseDecimal(n.Value)
		if _, twice := inc[name]; !ok || twice {
			return nil
		}
		inc[name] = d
	}
	return inc
}

// attrName resolves an update's path when it names one top-level
// attribute: a placeholder, or a plain name.
func attrName(path string, names map[string]string) (string, bool) {
	if strings.HasPrefix(path, "#") {
		n, ok := names[path]
		return n, ok
	}
	for _, c := range path {
		if !(c == '_' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9') {
			return "", false
		}
	}
	return path, path != ""
}

// mergeIncrements is the one Update that adds up incs on the item of w,
// the first of them: an action of the batch's transaction shared by the
// messages whose increments they are.
func mergeIncrements(w types.TransactWriteItem, incs []increment) (types.TransactWriteItem, bool) {
	sum := increment{}
	for _, inc := range incs {
		for name, d := range inc {
			sum[name] = sum[name].add(d)
		}
	}
	names := sortedNames(sum)
	var up expression.UpdateBuilder
	for _, name := range names {
		v, ok := sum[name].format()
		if !ok {
			return types.TransactWriteItem{}, false // past DynamoDB's precision: each message's own action
		}
		up = up.Add(expression.Name(name), expression.Value(&types.AttributeValueMemberN{Value: v}))
	}
	expr, err := expression.NewBuilder().WithUpdate(up).Build()
	if err != nil {
		return types.TransactWriteItem{}, false
	}
	return types.TransactWriteItem{Update: &types.Update{
		TableName: w.Update.TableName, Key: w.Update.Key, UpdateExpression: expr.Update(),
		ExpressionAttributeNames: expr.Names(), ExpressionAttributeValues: expr.Values(),
	}}, true
}

// decimal is a DynamoDB number without an exponent: unscaled / 10^scale.
type decimal struct {
	unscaled *big.Int
	scale    int
}

// parseDecimal reads [+-]digits[.digits]; false for anything else (an
// exponent, say), which is then not merged.
func parseDecimal(s string) (decimal, bool) {
	sign := ""
	if s != "" && (s[0] == '-' || s[0] == '+') {
		sign, s = s[:1], s[1:]
	}
	whole, frac, _ := strings.Cut(s, ".")
	if whole == "" && frac == "" || strings.ContainsFunc(whole+frac, func(c rune) bool { return c < '0' || c > '9' }) {
		return decimal{}, false
	}
	u, ok := new(big.Int).SetString(sign+whole+frac, 10)
	return decimal{u, len(frac)}, ok
}

// add is d + e, at the larger scale.
func (d decimal) add(e decimal) decimal {
	if d.unscaled == nil {
		return e
	}
	scale := max(d.scale, e.scale)
	return decimal{new(big.Int).Add(d.rescaled(scale), e.rescaled(scale)), scale}
}

func (d decimal) rescaled(scale int) *big.Int {
	return new(big.Int).Mul(d.unscaled, new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(scale-d.scale)), nil))
}

// maxNumberDigits is DynamoDB's precision (developer guide, "Data types").
const maxNumberDigits = 38

// format is d as DynamoDB writes numbers; false past DynamoDB's 38
// digits.
func (d decimal) format() (string, bool) {
	digits := new(big.Int).Abs(d.unscaled).String()
	if len(strings.TrimLeft(digits, "0")) > maxNumberDigits {
		return "", false
	}
	if d.scale > 0 {
		digits = strings.Repeat("0", max(0, d.scale+1-len(digits))) + digits
		digits = digits[:len(digits)-d.scale] + "." + digits[len(digits)-d.scale:]
	}
	if d.unscaled.Sign() < 0 {
		digits = "-" + digits
	}
	return digits, true
}

// sharedIncrements are, of a transaction's deliveries, the items that more
// than one of them increments: each becomes one action.
func sharedIncrements(ds []*delivery) map[target]bool {
	count := map[target]int{}
	for _, d := range ds {
		for j, t := range d.tx.targets {
			if d.tx.inc(j) != nil {
				count[t]++
			}
		}
	}
	shared := map[target]bool{}
	for t, n := range count {
		if n > 1 {
			shared[t] = true
		}
	}
	return shared
}
