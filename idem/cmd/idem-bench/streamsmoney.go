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

// dollars is c's price per million, a range when c is.
func (c ruCost) dollars() string {
	lo, hi := c.wruLow*priceWRU+c.rru*priceRRU, c.wruHigh*priceWRU+c.rru*priceRRU
	if lo == hi {
		return fmt.Sprintf("$%.2f", lo)
	}
	return fmt.Sprintf("$%.2f to $%.2f", lo, hi)
}

// billed are the calls DynamoDB bills a side of a stream for, per
// delivery: those that reached HTTP where the strategy's sends were
// counted (a call the kit called off before it was sent reaches nothing;
// one left to run, or called off in flight, has reached DynamoDB and is
// billed as run),
// else those started (Powertools, counted by bench.js).
func billed(started, sent map[string]int, n int) map[string]float64 {
	if sent != nil {
		return perDelivery(sent, n)
	}
	return perDelivery(started, n)
}

// messageCost is a message's units in stream st from a line's counts: its
// first delivery and its share of duplicates.
func messageCost(st stream, ss *streamStats) (first, dup, msg ruCost) {
	firsts, dups := st.timed()
	first = ruOf(billed(ss.opsFirst, ss.sentFirst, firsts), false)
	dup = ruOf(billed(ss.opsDup, ss.sentDup, dups), true)
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
	p("This kit's duplicate with its defaults, once its sender's duplicates pass `ReadFirstAbove`, is a read (0.5 RRU) and, when its transaction was sent before the read came back (a sender that does not count its deliveries), that transaction cancelled by its claim's condition (2 to 4 WRU), left to run unwaited for; a redelivery the sender counts waits for its read and sends no transaction when the read finds its claim; below the threshold, or with `-1`, the cancelled transaction alone. ")
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
	p("\nThis kit's duplicates with its defaults, by what became of their transaction when they read their claim (on the %s; a transaction is \"sent\" once the SDK hands it to its HTTP client with its context live, \"left to run\" when the delivery answered before its answer came, \"called off in flight\" when its context ended first), and a message's price per million as counted beside the two bounds: every duplicate a read alone, every one a read and a cancelled transaction. ", r.servers[j].name)
	p("The kit does not cut a call short: Go's transport closes a connection whose request is called off in flight, and the next request opens another (a TCP handshake on this loopback, a TCP and TLS handshake to DynamoDB, which the model does not price); connections opened per delivery say how often that happens.\n\n")
	p("The last column counts first deliveries this kit answered `Duplicate` because the read beside found the claim their own transaction had just committed (the effect applied once, the outcome misnamed, the time the read's): the model forwards a transaction late in its drawn time and after the reads that reached it first (`proxy.go`), as DynamoDB commits late, so few should.\n\n")
	p("| stream | duplicates timed | read their claim | transaction not started (the read came back first, or a counted redelivery waited for it) | started, called off before it was sent | sent, left to run | sent, called off in flight | sent and answered | connections opened per delivery | per million messages: as counted | every duplicate a read alone | every duplicate a read + a cancelled transaction | first deliveries answered Duplicate |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	for s, st := range x.streams {
		firsts, dups := st.timed()
		ss := &x.stats[s][lineKit][j]
		read := 0
		for _, n := range ss.fates {
			read += n
		}
		f, _, m := messageCost(st, ss)
		perMsg := float64(dups) / float64(max(firsts, 1))
		readOnly := f.plus(ruOf(map[string]float64{"GetItem": 1}, true), perMsg)
		readTx := f.plus(ruOf(map[string]float64{"GetItem": 1, "TransactWriteItems": 1}, true), perMsg)
		p("| %s | %d | %d | %d | %d | %d | %d | %d | %.2f | %s | %s | %s | %d of %d |\n", st.name, dups, read,
			ss.fates[txNotStarted], ss.fates[txNotSent], ss.fates[txUnwaited], ss.fates[txCalledOff], ss.fates[txAnswered],
			float64(ss.connsFirst+ss.connsDup)/float64(max(firsts+dups, 1)), m.dollars(), readOnly.dollars(), readTx.dollars(), ss.firstAsDup, firsts)
	}
	p("\n")
}
