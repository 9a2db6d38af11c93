package main

// What the hot-item section's credits cost in DynamoDB's documented
// request units, from how the model answered each request (the proxy's
// tally), and in dollars at priceWRU and priceRRU (streamsmoney.go).
// Items are under 1 KB (claims and balances; reads under 4 KB).

// hotUnitRules say, beside the table, what each answer is counted as.
const hotUnitRules = "a committed `TransactWriteItems` 2 WRU per action (4 for the kit's claim and credit; documented); " +
	"one cancelled by a condition 1 to 2 WRU per action (a failed conditional write consumes 1, a committed transactional write 2; what a cancelled transaction is billed is not documented); " +
	"one refused for a transaction conflict 0 to 2 WRU per action (not documented either); " +
	"a single write, committed or failing its condition, 1 WRU (documented); " +
	"a `TransactionConflictException` answer 0 to 1 WRU (its billing is not documented); " +
	"a `GetItem` 0.5 RRU, 1 when strongly consistent (documented); " +
	"a throttled request nothing (throttled requests are not billed)"

// hotUnits are the documented units of a tally's answers, as
// hotUnitRules say.
func hotUnits(t proxyTally) ruCost {
	var c ruCost
	for k, n := range t.answers {
		a := float64(t.actions[k])
		var lo, hi float64 // write units
		switch k.op {
		case "TransactWriteItems":
			switch k.kind {
			case answerOK:
				lo, hi = txActionUnits*a, txActionUnits*a
			case answerCondition:
				lo, hi = a, txActionUnits*a
			case answerConflict:
				hi = txActionUnits * a
			}
		case "GetItem":
			if k.kind == answerOK {
				c.rru += 0.5 * float64(n)
			}
		case "GetItem, consistent":
			if k.kind == answerOK {
				c.rru += float64(n)
			}
		default: // PutItem, UpdateItem, DeleteItem (no line here sends BatchWriteItem)
			switch k.kind {
			case answerOK, answerCondition:
				lo, hi = singleUnits*a, singleUnits*a
			case answerConflict:
				hi = singleUnits * a
			}
		}
		c.wruLow += lo
		c.wruHigh += hi
	}
	return c
}

// perCredit is a run's units per credit: its dollars() are the price of
// a million credits.
func (h hotRun) perCredit() ruCost {
	u := hotUnits(h.tally)
	f := 1 / float64(max(h.messages, 1))
	return ruCost{u.rru * f, u.wruLow * f, u.wruHigh * f}
}
