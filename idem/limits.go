package idem

import (
	"fmt"
	"slices"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// What DynamoDB would refuse of an effect, checked before anything is
// sent: how it names and measures the items of a transaction, and its
// limits on them.

// validate refuses, before anything is sent, what DynamoDB would refuse
// of eff, which commits with k's claim: too many actions, a write without
// a table or with two operations, two writes on one item, a response or a
// transaction over its limit. The effect's writes are the handler's own
// first (own of them), then its outgoing messages' outbox items
// (addOutbox). size is the writes' size, as a transaction counts it.
func (s *Store) validate(k claimKey, eff Effect, own int) (size int, err error) {
	key := k.name
	// A nil AttributeValue (a typed nil pointer, say) would panic while
	// the writes are measured; it is the handler's input, so an error,
	// naming the write being measured (at).
	at := -1
	defer func() {
		if v := recover(); v != nil {
			what := "an effect write"
			if at >= 0 {
				what = fmt.Sprintf("effect write %d on %s", at, writeTable(eff.Writes[at]))
			}
			err = &InvalidError{Key: key, Reason: fmt.Sprintf("%s holds a value DynamoDB cannot take (%v); is an AttributeValue nil?", what, v)}
		}
	}()
	bad := func(format string, args ...any) error {
		return &InvalidError{Key: key, Reason: fmt.Sprintf(format, args...)}
	}
	if n := len(eff.Writes) + 1; n > maxTransactItems {
		if own < len(eff.Writes) {
			return 0, bad("%d effect writes, %d outgoing messages and the claim are %d actions; a transaction allows %d", own, len(eff.Writes)-own, n, maxTransactItems)
		}
		return 0, bad("%d effect writes plus the claim is %d actions; a transaction allows %d", len(eff.Writes), n, maxTransactItems)
	}
	if len(eff.Response) > s.opts.MaxResponseBytes {
		return 0, bad("response is %d bytes; the limit is %d (Options.MaxResponseBytes)", len(eff.Response), s.opts.MaxResponseBytes)
	}
	// Key attribute names per table, as far as this transaction tells them:
	// the claim table's from the options, others from their writes' Keys.
	names := s.keyNames
	keyAttrs := map[string][]string{s.table: names, s.opts.OutboxTable: names}
	seen := map[target]int{{s.table, k.canon}: -1}
	var puts []int
	for i, w := range eff.Writes {
		at = i
		table, k, n, err := describeWrite(w)
		if err != nil {
			if t := writeTable(w); t != "" {
				return 0, bad("effect write %d on %s: %v", i, t, err)
			}
			return 0, bad("effect write %d: %v", i, err)
		}
		size += n
		if k == nil {
			puts = append(puts, i)
			continue
		}
		if name := emptyKeyValue(k); name != "" {
			return 0, bad("effect write %d on %s: key attribute %q is empty; DynamoDB refuses an empty key value", i, table, name)
		}
		if _, ok := keyAttrs[table]; !ok {
			keyAttrs[table] = sortedNames(k)
		}
		if err := s.addTarget(seen, target{table, canonicalKey(k)}, i, bad); err != nil {
			return 0, err
		}
	}
	for _, i := range puts {
		at = i
		p := eff.Writes[i].Put
		table := aws.ToString(p.TableName)
		if n := itemSize(p.Item); n > maxItemBytes {
			return 0, bad("effect write %d on %s puts an item of %d bytes; DynamoDB allows %d", i, table, n, maxItemBytes)
		}
		names, ok := keyAttrs[table]
		if !ok {
			continue // its key schema is unknown here; DynamoDB checks it
		}
		k := map[string]types.AttributeValue{}
		for _, name := range names {
			if v, ok := p.Item[name]; ok {
				k[name] = v
			}
		}
		if len(k) != len(names) {
			return 0, bad("effect write %d on %s puts an item without its key attributes %v", i, table, names)
		}
		if name := emptyKeyValue(k); name != "" {
			return 0, bad("effect write %d on %s: key attribute %q is empty; DynamoDB refuses an empty key value", i, table, name)
		}
		if err := s.addTarget(seen, target{table, canonicalKey(k)}, i, bad); err != nil {
			return 0, err
		}
	}
	if size > maxTransactBytes {
		return 0, bad("the transaction is about %d bytes; DynamoDB allows %d", size, maxTransactBytes)
	}
	return size, nil
}

// How DynamoDB names and measures the items of a transaction, as
// validate checks an effect against its limits before anything is sent.

// emptyKeyValue is the name of a key attribute whose string or binary
// value is empty, which DynamoDB refuses (a ValidationException, which
// would otherwise fail the delivery as the kit's fault, on every retry).
func emptyKeyValue(k map[string]types.AttributeValue) string {
	for name, v := range k {
		switch v := v.(type) {
		case *types.AttributeValueMemberS:
			if v.Value == "" {
				return name
			}
		case *types.AttributeValueMemberB:
			if len(v.Value) == 0 {
				return name
			}
		}
	}
	return ""
}

// target is one item: a table and its canonical key.
type target struct{ table, key string }

func (s *Store) addTarget(seen map[target]int, t target, i int, bad func(string, ...any) error) error {
	if j, dup := seen[t]; dup {
		if j < 0 {
			return bad("effect write %d on %s is on the claim record itself", i, t.table)
		}
		return bad("effect writes %d and %d are on the same item of %s; a transaction allows one action per item", j, i, t.table)
	}
	seen[t] = i
	return nil
}

// describeWrite returns a write's table, its Key (nil for a Put) and its
// approximate size in bytes.
func describeWrite(w types.TransactWriteItem) (table string, key map[string]types.AttributeValue, size int, err error) {
	ops := 0
	var names map[string]string
	var values map[string]types.AttributeValue
	exprs := 0 // the expressions' length
	if w.Put != nil {
		ops++
		table, names, values = aws.ToString(w.Put.TableName), w.Put.ExpressionAttributeNames, w.Put.ExpressionAttributeValues
		size += itemSize(w.Put.Item)
		exprs += len(aws.ToString(w.Put.ConditionExpression))
		if len(w.Put.Item) == 0 {
			return "", nil, 0, fmt.Errorf("Put without an Item")
		}
	}
	if w.Update != nil {
		ops++
		table, key, names, values = aws.ToString(w.Update.TableName), w.Update.Key, w.Update.ExpressionAttributeNames, w.Update.ExpressionAttributeValues
		exprs += len(aws.ToString(w.Update.UpdateExpression)) + len(aws.ToString(w.Update.ConditionExpression))
		if aws.ToString(w.Update.UpdateExpression) == "" {
			return "", nil, 0, fmt.Errorf("Update without an UpdateExpression")
		}
	}
	if w.Delete != nil {
		ops++
		table, key, names, values = aws.ToString(w.Delete.TableName), w.Delete.Key, w.Delete.ExpressionAttributeNames, w.Delete.ExpressionAttributeValues
		exprs += len(aws.ToString(w.Delete.ConditionExpression))
	}
	if w.ConditionCheck != nil {
		ops++
		table, key, names, values = aws.ToString(w.ConditionCheck.TableName), w.ConditionCheck.Key, w.ConditionCheck.ExpressionAttributeNames, w.ConditionCheck.ExpressionAttributeValues
		exprs += len(aws.ToString(w.ConditionCheck.ConditionExpression))
		if aws.ToString(w.ConditionCheck.ConditionExpression) == "" {
			return "", nil, 0, fmt.Errorf("ConditionCheck without a ConditionExpression")
		}
	}
	switch {
	case ops == 0:
		return "", nil, 0, fmt.Errorf("no operation (set one of Put, Update, Delete, ConditionCheck)")
	case ops > 1:
		return "", nil, 0, fmt.Errorf("%d operations in one write; set exactly one", ops)
	case table == "":
		return "", nil, 0, fmt.Errorf("no TableName")
	case w.Put == nil && len(key) == 0:
		return "", nil, 0, fmt.Errorf("no Key")
	}
	size += len(table) + itemSize(key) + itemSize(values)
	for k, v := range names {
		size += len(k) + len(v)
	}
	return table, key, size + exprs, nil
}

// itemSize approximates DynamoDB's item size: attribute names plus values.
func itemSize(item map[string]types.AttributeValue) int {
	n := 0
	for name, v := range item {
		n += len(name) + valueSize(v)
	}
	return n
}

func valueSize(v types.AttributeValue) int {
	switch v := v.(type) {
	case *types.AttributeValueMemberS:
		return len(v.Value)
	case *types.AttributeValueMemberN:
		return numberSize(v.Value)
	case *types.AttributeValueMemberB:
		return len(v.Value)
	case *types.AttributeValueMemberSS:
		return sizeOfEach(v.Value, func(s string) int { return len(s) })
	case *types.AttributeValueMemberNS:
		return sizeOfEach(v.Value, numberSize)
	case *types.AttributeValueMemberBS:
		return sizeOfEach(v.Value, func(b []byte) int { return len(b) })
	case *types.AttributeValueMemberL:
		return 3 + len(v.Value) + sizeOfEach(v.Value, valueSize)
	case *types.AttributeValueMemberM:
		return 3 + itemSize(v.Value) + len(v.Value)
	default: // BOOL, NULL
		return 1
	}
}

// numberSize approximates a number's size: about a byte per two digits.
func numberSize(n string) int { return len(n)/2 + 2 }

// sizeOfEach is the sum of size over a set's or a list's elements.
func sizeOfEach[E any](es []E, size func(E) int) int {
	n := 0
	for _, e := range es {
		n += size(e)
	}
	return n
}

// canonicalKey renders a key so that equal keys compare equal.
func canonicalKey(k map[string]types.AttributeValue) string {
	if len(k) == 1 { // the usual key: nothing to sort, one string to build
		for name, v := range k {
			if v, ok := v.(*types.AttributeValueMemberS); ok {
				return name + "\x00S" + v.Value + "\x00"
			}
		}
	}
	var b strings.Builder
	for _, name := range sortedNames(k) {
		b.WriteString(name)
		b.WriteByte(0)
		switch v := k[name].(type) {
		case *types.AttributeValueMemberS:
			b.WriteString("S" + v.Value)
		case *types.AttributeValueMemberN:
			b.WriteString("N" + v.Value)
		case *types.AttributeValueMemberB:
			b.WriteString("B" + string(v.Value))
		default:
			fmt.Fprintf(&b, "%T%v", v, v)
		}
		b.WriteByte(0)
	}
	return b.String()
}

// sortedNames are an item's or a key's attribute names, sorted.
func sortedNames[V any](m map[string]V) []string {
	names := make([]string, 0, len(m))
	for n := range m {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}
