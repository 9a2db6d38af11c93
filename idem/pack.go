package idem

import (
	"context"
	"log/slog"
	"slices"
	"sync"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// Packing a batch's entries into transactions: the items each entry
// touches, and the first transaction each fits without breaking
// DynamoDB's limits (100 actions, 4 MB, one action per item), where the
// increments of one item by several deliveries are one action
// (increment.go).

// measure builds each delivery's actions and finds the items they touch,
// and returns ds. A Put names its item through the table's key
// attributes, which the other writes on that table tell or, in a commit
// of several deliveries, the table's description (keySchemas); when
// neither does, the Put is taken to touch the whole table.
func (c *commitRun) measure(ds []*delivery) []*delivery {
	merge := c.merge
	type put struct {
		t    *target
		item map[string]types.AttributeValue
	}
	var puts []put
	// The keyed writes, to name the Puts' items by (a few, on the stack).
	type keyed struct {
		table string
		key   map[string]types.AttributeValue
	}
	var buf [8]keyed
	keys := buf[:0]
	for _, d := range ds {
		tx := &d.tx
		tx.items = append(make([]types.TransactWriteItem, 0, len(tx.writes)+1), c.s.claimPut(d))
		tx.items = append(tx.items, tx.writes...)
		tx.targets = make([]target, len(tx.items))
		tx.incs = nil
		if merge {
			tx.incs = make([]increment, len(tx.items))
		}
		_, _, claimSize, _ := describeWrite(tx.items[0])
		tx.size = claimSize + tx.writesSize
		for j, w := range tx.items {
			t := &tx.targets[j]
			if j == 0 {
				t.table, t.key = c.s.table, d.key.canon
				continue
			}
			table, k := writeKey(w) // validate has vouched for each
			t.table = table
			switch {
			case k != nil:
				t.key = canonicalKey(k)
				keys = append(keys, keyed{table, k})
				if merge {
					tx.incs[j] = incrementOf(w)
				}
			default:
				puts = append(puts, put{t, w.Put.Item})
			}
		}
	}
	if len(puts) == 0 {
		return ds
	}
	// The outbox table has the claims table's key schema (Options.OutboxTable).
	names := c.s.keyNames
	keyAttrs := map[string][]string{c.s.table: names, c.s.opts.OutboxTable: names}
	for _, w := range keys {
		if keyAttrs[w.table] == nil {
			keyAttrs[w.table] = sortedNames(w.key)
		}
	}
	for _, p := range puts {
		if keyAttrs[p.t.table] == nil && merge {
			keyAttrs[p.t.table] = c.s.schemas.names(c.ctx, c.s, p.t.table)
		}
	}
	for _, p := range puts {
		if k := keyOf(p.item, keyAttrs[p.t.table]); k != nil {
			p.t.key = canonicalKey(k)
		}
	}
	return ds
}

// keySchemas are the key attribute names of the tables a batch's Puts
// write, read with DescribeTable once per table, so that a batch's Puts
// of new items on one table (an entry per message) share a transaction.
// A single delivery asks nothing: it has nothing to pack. Without
// DescribeTable, or where it is denied, a Put touches its whole table: one
// such delivery a transaction, as correct and dearer.
type keySchemas struct {
	mu      sync.Mutex
	byTable map[string][]string // nil: unknown for good (denied)
}

// names are table's key attribute names, sorted; nil when unknown. A
// failure other than a denial is not remembered: the next batch asks
// again.
func (k *keySchemas) names(ctx context.Context, s *Store, table string) []string {
	if s.describer == nil {
		return nil
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if names, ok := k.byTable[table]; ok {
		return names
	}
	out, err := s.describer.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: &table})
	switch {
	case isAccessDenied(err):
		s.opts.Logger.LogAttrs(ctx, slog.LevelWarn, "idem: a batch's Puts on this table go one delivery a transaction: DescribeTable, which tells its key, is denied; grant dynamodb:DescribeTable on it",
			slog.String("table", table), slog.String("error", err.Error()))
		k.remember(table, nil)
		return nil
	case err != nil || out.Table == nil:
		return nil
	}
	var names []string
	for _, e := range out.Table.KeySchema {
		if e.AttributeName != nil {
			names = append(names, *e.AttributeName)
		}
	}
	slices.Sort(names)
	k.remember(table, names)
	return names
}

func (k *keySchemas) remember(table string, names []string) {
	if k.byTable == nil {
		k.byTable = map[string][]string{}
	}
	k.byTable[table] = names
}

// inc is item j's increment, nil when it is none or, its delivery alone
// in its commit, was not read (measure).
func (e *txState) inc(j int) increment {
	if j < len(e.incs) {
		return e.incs[j]
	}
	return nil
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
	ds      []*delivery
	actions int
	size    int
	alone   bool
	items   map[target]bool // items an action of one entry writes
	incs    map[target]bool // items only incremented: one action, shared
	tables  map[string]bool // tables touched
	whole   map[string]bool // tables touched as a whole
}

// place puts e in the first transaction it fits, or in a new one.
func place(txs *[]*tx, d *delivery) {
	for _, t := range *txs {
		if t.fits(d) {
			t.add(d)
			return
		}
	}
	t := &tx{alone: d.tx.alone, items: map[target]bool{}, incs: map[target]bool{}, tables: map[string]bool{}, whole: map[string]bool{}}
	t.add(d)
	*txs = append(*txs, t)
}

func (t *tx) fits(d *delivery) bool {
	e := &d.tx
	if t.alone || e.alone || t.actions+t.newActions(d) > maxTransactItems || t.size+e.size > maxTransactBytes {
		return false
	}
	for j, g := range e.targets {
		switch {
		case g.key == "" && t.tables[g.table], g.key != "" && (t.items[g] || t.whole[g.table]):
			return false
		case t.incs[g] && e.inc(j) == nil: // an increment may share its item only with increments
			return false
		}
	}
	return true
}

// newActions is how many actions d adds to t: one per item, but for the
// increments of items t increments already.
func (t *tx) newActions(d *delivery) int {
	e := &d.tx
	n := len(e.items)
	for j, g := range e.targets {
		if e.inc(j) != nil && t.incs[g] {
			n--
		}
	}
	return n
}

func (t *tx) add(d *delivery) {
	e := &d.tx
	t.actions += t.newActions(d)
	t.ds = append(t.ds, d)
	t.size += e.size
	for j, g := range e.targets {
		t.tables[g.table] = true
		switch {
		case g.key == "":
			t.whole[g.table] = true
		case e.inc(j) != nil:
			t.incs[g] = true
		default:
			t.items[g] = true
		}
	}
}

// actions are the transaction of ds: each delivery's items in turn, but
// one action for the increments of an item that several of them
// increment, their sum, where the first of them stands. at[k][j] is the
// action of delivery k's item j; false when a sum is past DynamoDB's
// precision.
func actions(ds []*delivery) (items []types.TransactWriteItem, at [][]int, ok bool) {
	if len(ds) == 1 { // its own items: at is nil, the identity (actionOf)
		return ds[0].tx.items, nil, true
	}
	shared := sharedIncrements(ds)
	merged := map[target]int{} // an item's shared action
	sums := map[int][]increment{}
	at = make([][]int, len(ds))
	for k, d := range ds {
		e := &d.tx
		at[k] = make([]int, len(e.items))
		for j, w := range e.items {
			g := e.targets[j]
			if e.inc(j) == nil || !shared[g] {
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
			sums[a] = append(sums[a], e.inc(j))
		}
	}
	for a, incs := range sums {
		if items[a], ok = mergeIncrements(items[a], incs); !ok {
			return nil, nil, false
		}
	}
	return items, at, true
}

// actionOf is the action of delivery k's item j in actions' at.
func actionOf(at [][]int, k, j int) int {
	if at == nil {
		return j
	}
	return at[k][j]
}

// written are the items ds's effects write, as far as their keys tell:
// what the Store's other transactions must not write at the same time
// (itemlock.go). Claims are their deliveries' own, outbox items new.
func written(ds []*delivery) []target {
	var ts []target
	for _, d := range ds {
		for j, g := range d.tx.targets {
			if j > 0 && g.key != "" && outboxID(d.tx.items[j]) == "" {
				ts = append(ts, g)
			}
		}
	}
	return ts
}
