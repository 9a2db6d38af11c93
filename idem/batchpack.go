package idem

import (
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// Packing a batch's entries into transactions: the items each entry
// touches, and the first transaction each fits without breaking
// DynamoDB's limits (100 actions, 4 MB, one action per item), where the
// increments of one item by several entries are one action (increment.go).

// measure builds each entry's actions and finds the items they touch. A
// Put names its item through the table's key attributes, which only the
// batch's other writes on that table tell; when none does, the Put is
// taken to touch the whole table.
func (b *batchRun) measure(es []*entry) {
	// The outbox table has the claims table's key schema (Options.OutboxTable).
	names := b.s.keyNames
	keyAttrs := map[string][]string{b.s.table: names, b.s.opts.OutboxTable: names}
	type put struct {
		t    *target
		item map[string]types.AttributeValue
	}
	var puts []put
	for _, e := range es {
		e.items = append(make([]types.TransactWriteItem, 0, len(e.writes)+1), e.c.put(e.rec))
		e.items = append(e.items, e.writes...)
		e.targets = make([]target, len(e.items))
		e.incs = make([]increment, len(e.items))
		e.size = 0
		for j, w := range e.items {
			table, k, n, _ := describeWrite(w) // validateEffect has vouched for each
			e.size += n
			t := &e.targets[j]
			t.table = table
			switch {
			case j == 0:
				t.key = canonicalKey(e.rec.keyItem)
			case k != nil:
				t.key = canonicalKey(k)
				if keyAttrs[table] == nil {
					keyAttrs[table] = sortedNames(k)
				}
				e.incs[j] = incrementOf(w)
			default:
				puts = append(puts, put{t, w.Put.Item})
			}
		}
	}
	for _, p := range puts {
		if k := keyOf(p.item, keyAttrs[p.t.table]); k != nil {
			p.t.key = canonicalKey(k)
		}
	}
}

// keyOf is item's key, or nil when names are unknown or missing from it.
func keyOf(item map[string]types.AttributeValue, names []string) map[string]types.AttributeValue {
	if len(names) == 0 {
		return nil
	}
	k := make(map[string]types.AttributeValue, len(names))
	for _, name := range names {
		v, ok := item[name]
		if !ok {
			return nil
		}
		k[name] = v
	}
	return k
}

// tx is one transaction being packed.
type tx struct {
	entries []*entry
	actions int
	size    int
	alone   bool
	items   map[target]bool // items an action of one entry writes
	incs    map[target]bool // items only incremented: one action, shared
	tables  map[string]bool // tables touched
	whole   map[string]bool // tables touched as a whole
}

// place puts e in the first transaction it fits, or in a new one.
func place(txs *[]*tx, e *entry) {
	for _, t := range *txs {
		if t.fits(e) {
			t.add(e)
			return
		}
	}
	t := &tx{alone: e.alone, items: map[target]bool{}, incs: map[target]bool{}, tables: map[string]bool{}, whole: map[string]bool{}}
	t.add(e)
	*txs = append(*txs, t)
}

func (t *tx) fits(e *entry) bool {
	if t.alone || e.alone || t.actions+t.newActions(e) > maxTransactItems || t.size+e.size > maxTransactBytes {
		return false
	}
	for j, g := range e.targets {
		switch {
		case g.key == "" && t.tables[g.table], g.key != "" && (t.items[g] || t.whole[g.table]):
			return false
		case t.incs[g] && e.incs[j] == nil: // an increment may share its item only with increments
			return false
		}
	}
	return true
}

// newActions is how many actions e adds to t: one per item, but for the
// increments of items t increments already.
func (t *tx) newActions(e *entry) int {
	n := len(e.items)
	for j, g := range e.targets {
		if e.incs[j] != nil && t.incs[g] {
			n--
		}
	}
	return n
}

func (t *tx) add(e *entry) {
	t.actions += t.newActions(e)
	t.entries = append(t.entries, e)
	t.size += e.size
	for j, g := range e.targets {
		t.tables[g.table] = true
		switch {
		case g.key == "":
			t.whole[g.table] = true
		case e.incs[j] != nil:
			t.incs[g] = true
		default:
			t.items[g] = true
		}
	}
}

// actions are the transaction of es: each entry's items in turn, but one
// action for the increments of an item that several of them increment,
// their sum, where the first of them stands. at[k][j] is the action of
// entry k's item j; false when a sum is past DynamoDB's precision.
func actions(es []*entry) (items []types.TransactWriteItem, at [][]int, ok bool) {
	shared := sharedIncrements(es)
	merged := map[target]int{} // an item's shared action
	sums := map[int][]increment{}
	at = make([][]int, len(es))
	for k, e := range es {
		at[k] = make([]int, len(e.items))
		for j, w := range e.items {
			g := e.targets[j]
			if e.incs[j] == nil || !shared[g] {
				at[k][j] = len(items)
				items = append(items, w)
				continue
			}
			a, seen := merged[g]
			if !seen {
				a = len(items)
				merged[g] = a
				items = append(items, w)
			}
			at[k][j] = a
			sums[a] = append(sums[a], e.incs[j])
		}
	}
	for a, incs := range sums {
		if items[a], ok = mergeIncrements(items[a], incs); !ok {
			return nil, nil, false
		}
	}
	return items, at, true
}

// written are the items es's effects write, as far as their keys tell:
// what the Store's other transactions must not write at the same time
// (itemlock.go). Claims are their deliveries' own, outbox items new.
func written(es []*entry) []target {
	var ts []target
	for _, e := range es {
		for j, g := range e.targets {
			if j > 0 && g.key != "" && outboxID(e.items[j]) == "" {
				ts = append(ts, g)
			}
		}
	}
	return ts
}
