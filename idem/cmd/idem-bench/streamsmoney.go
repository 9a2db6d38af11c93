package main

import "fmt"

// On-demand prices in us-east-1 (standard table class), dollars per
// million request units, since DynamoDB's on-demand price cut of 1
// November 2024. Not read from AWS here: AWS's page renders its figures in
// the browser; these are as quoted by a dated third-party page, named in
// priceSource, which the report prints beside them.
const (
	priceWRU    = 0.625
	priceRRU    = 0.125
	priceSource = "us-east-1 on-demand, standard table class, after the price cut of 1 November 2024, as quoted by airbyte.com's \"Amazon DynamoDB Pricing\" (21 July 2025); AWS's own page is aws.amazon.com/dynamodb/pricing/on-demand/, where to check them before quoting"
)

// ruCost is a delivery's documented request units, from the calls it
// made: each GetItem (eventually consistent, under 4 KB) 0.5 RRU, each
// single-item write (under 1 KB) 1 WRU, a committed 2-action transaction
// 4 WRU, a cancelled one 2 to 4 WRU (the documentation does not say).
type ruCost struct{ rru, wruLow, wruHigh float64 }

func ruOf(ops map[string]float64, dup bool) ruCost {
	c := ruCost{rru: 0.5 * ops["GetItem"]}
	single := ops["PutItem"] + ops["UpdateItem"] + ops["DeleteItem"]
	c.wruLow, c.wruHigh = single, single
	if tx := ops["TransactWriteItems"]; dup {
		c.wruLow += 2 * tx
		c.wruHigh += 4 * tx
	} else {
		c.wruLow += 4 * tx
		c.wruHigh += 4 * tx
	}
	return c
}

func (c ruCost) plus(d ruCost, times float64) ruCost {
	return ruCost{c.rru + times*d.rru, c.wruLow + times*d.wruLow, c.wruHigh + times*d.wruHigh}
}

func (c ruCost) String() string {
	w := fmt.Sprintf("%.1f", c.wruLow)
	if c.wruHigh != c.wruLow {
		w = fmt.Sprintf("%.1f to %.1f", c.wruLow, c.wruHigh)
	}
	return fmt.Sprintf("%s WRU + %.2f RRU", w, c.rru)
}

// topDollars is the top of c's price per million, in dollars.
func (c ruCost) topDollars() float64 { return c.wruHigh*priceWRU + c.rru*priceRRU }

// dollars is c's price per million, a range when c is.
func (c ruCost) dollars() string {
	lo, hi := c.wruLow*priceWRU+c.rru*priceRRU, c.wruHigh*priceWRU+c.rru*priceRRU
	if lo == hi {
		return fmt.Sprintf("$%.2f", lo)
	}
	return fmt.Sprintf("$%.2f to $%.2f", lo, hi)
}

// messageCost is a message's units in stream st from a line's counts: its
// first delivery and its share of duplicates.
func messageCost(st stream, ss *streamStats) (first, dup, msg ruCost) {
	firsts, dups := st.timed()
	first = ruOf(perDelivery(ss.opsFirst, firsts), false)
	dup = ruOf(perDelivery(ss.opsDup, dups), true)
	return first, dup, first.plus(dup, float64(dups)/float64(max(firsts, 1)))
}

// moneySection says what a message costs in request units and dollars,
// by DynamoDB's documentation, from every stream's counted calls, and what
// became of this kit's transactions beside a read.
func (r report) moneySection(p func(string, ...any)) {
	x, j := r.streams, r.countIndex()
	p("### What a message costs in request units\n\n")
	p("Not measured (the local server reports no capacity): DynamoDB's documented units, for claims and records under 1 KB, applied to the calls counted on the %s in each stream. ", r.servers[j].name)
	p("A `GetItem`, eventually consistent, of an item under 4 KB: 0.5 read request unit (RRU). A committed 2-action `TransactWriteItems`: 4 write request units (WRU); a single-item write 1 WRU. ")
	p("A 2-action transaction cancelled by its claim's condition: the developer guide says that DynamoDB \"performs two underlying reads or writes of every item in the transaction: one to prepare the transaction and one to commit the transaction\" (transaction-apis, \"Capacity management for transactions\"), and that when a condition \"evaluates to false during a conditional write, DynamoDB still consumes write capacity from the table\": one WCU when the item does not exist, otherwise by its size (WorkingWithItems, \"Capacity units consumed by conditional writes\"). ")
	p("It does not say what a cancelled transaction consumes, and a cancelled transaction's response carries no `ConsumedCapacity` to read it from (observed on DynamoDB by paritysuite/dynamodb-conformance, pull request 67, June 2026); so it is given as a range, from 1 WRU per item, a failed conditional write's, to 2 per item, a committed transaction's: 2 to 4 WRU for 2 actions. ")
	p("This kit's duplicate is one call: a read (0.5 RRU) where deliveries like it have lately been mostly duplicates (`ReadFirstAbove`: a key this environment settled before, a redelivery the sender counts, or a sender whose deliveries new to this environment are mostly duplicates), else the transaction its claim's condition cancels (2 to 4 WRU); with `ReadFirstAbove -1` always the cancelled transaction. A first delivery is its transaction, with a read before it only where the read is taken for a likely duplicate's. ")
	p("The Go two-phase lock's and Powertools' duplicate is a conditional `PutItem` that fails on an existing record under 1 KB: 1 WRU; their first delivery 3 single-item writes. ")
	p("Prices: $%.3f per million WRU and $%.3f per million RRU, %s.\n\n", priceWRU, priceRRU, priceSource)
	lines := x.statsLines()
	p("| stream | strategy | a first delivery | a duplicate | a message (first + its share of duplicates) | per million messages |\n|---|---|---|---|---|---|\n")
	for s, st := range x.streams {
		firsts, dups := st.timed()
		for _, l := range lines {
			if l.floor {
				continue
			}
			f, d, m := messageCost(st, l.stats(s, j))
			p("| %s (%.2f duplicates per message) | %s | %s | %s | %s | %s |\n", st.name, float64(dups)/float64(firsts), l.name, f, d, m, m.dollars())
		}
	}
	p("\nHow this kit answered its duplicates with its defaults (on the %s): by a read alone, or by the transaction their claim's condition cancelled, and the calls a first delivery made; a message's price per million as counted beside the two bounds: every duplicate a read, every duplicate a cancelled transaction.\n\n", r.servers[j].name)
	p("| stream | duplicates timed | answered by a read | by a cancelled transaction | calls per duplicate | calls per first delivery | per million messages: as counted | every duplicate a read | every duplicate a cancelled transaction |\n|---|---|---|---|---|---|---|---|---|\n")
	for s, st := range x.streams {
		firsts, dups := st.timed()
		ss := &x.stats[s][lineKit][j]
		f, _, m := messageCost(st, ss)
		perMsg := float64(dups) / float64(max(firsts, 1))
		readOnly := f.plus(ruOf(map[string]float64{"GetItem": 1}, true), perMsg)
		txOnly := f.plus(ruOf(map[string]float64{"TransactWriteItems": 1}, true), perMsg)
		p("| %s | %d | %d | %d | %.2f | %.2f | %s | %s | %s |\n", st.name, dups, ss.opsDup["GetItem"], ss.opsDup["TransactWriteItems"],
			float64(callsOf(ss.opsDup))/float64(max(dups, 1)), float64(callsOf(ss.opsFirst))/float64(max(firsts, 1)), m.dollars(), readOnly.dollars(), txOnly.dollars())
	}
	p("\n")
}

// callsOf is every call counted in ops.
func callsOf(ops map[string]int) int {
	n := 0
	for _, c := range ops {
		n += c
	}
	return n
}
