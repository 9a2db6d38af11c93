package idem

import (
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// Packing a batch's entries into transactions: the items each entry
// touches, and the first transaction each fits without breaking
// DynamoDB's limits (100 actions, 4 MB, one action per item).

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
	items   map[target]bool
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
	t := &tx{alone: e.alone, items: map[target]bool{}, tables: map[string]bool{}, whole: map[string]bool{}}
	t.add(e)
	*txs = append(*txs, t)
}

func (t *tx) fits(e *entry) bool {
	if t.alone || e.alone || t.actions+len(e.items) > maxTransactItems || t.size+e.size > maxTransactBytes {
		return false
	}
	for _, g := range e.targets {
		if g.key == "" && t.tables[g.table] || g.key != "" && (t.items[g] || t.whole[g.table]) {
			return false
		}
	}
	return true
}

func (t *tx) add(e *entry) {
	t.entries = append(t.entries, e)
	t.actions += len(e.items)
	t.size += e.size
	for _, g := range e.targets {
		t.tables[g.table] = true
		if g.key == "" {
			t.whole[g.table] = true
		} else {
			t.items[g] = true
		}
	}
}
