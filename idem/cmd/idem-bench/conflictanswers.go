package main

// What the conflict model answers itself (DynamoDB's error answers, after
// the request's own drawn latency) and what it counts of every answer, for
// the hot-item section's price and what capped each figure.

import (
	"encoding/json"
	"fmt"
	"net/http"
	"time"
)

// answer is how a modelled request was answered.
type answer int8

const (
	answerOK        answer = iota // served: committed, written or read
	answerCondition               // a condition failed: a cancelled transaction, a ConditionalCheckFailedException
	answerConflict                // refused by the model: it met a held item
	answerThrottled               // refused by the model: its partition's units were spent
	answerError                   // any other error answer of the local server
)

// answerKey is a class of answers: an operation ("GetItem, consistent"
// for a strongly consistent read) and how it was answered.
type answerKey struct {
	op   string
	kind answer
}

// proxyTally is what the model counted since it was last taken.
type proxyTally struct {
	answers   map[answerKey]int        // requests by operation and answer
	actions   map[answerKey]int        // their items: a transaction's actions, 1 for a single-item call
	forwarded map[string]int           // requests the local server answered, by operation
	late      int                      // of them, answered by it well after their drawn total time (late)
	heldFor   map[string]time.Duration // by item: how long transactions held it
	units     map[string]float64       // write units spent, by partition
}

func newTally() proxyTally {
	return proxyTally{answers: map[answerKey]int{}, actions: map[answerKey]int{}, forwarded: map[string]int{},
		heldFor: map[string]time.Duration{}, units: map[string]float64{}}
}

func (t *proxyTally) add(req *modelRequest, kind answer) {
	if t.answers == nil {
		*t = newTally()
	}
	op := req.op
	if op == "GetItem" && req.consistent {
		op = "GetItem, consistent"
	}
	k := answerKey{op, kind}
	t.answers[k]++
	t.actions[k] += len(req.items)
}

// take returns the tally and starts a new one; the partitions start full
// again, as each run of the section credits accounts of its own.
func (cm *conflicts) take() proxyTally {
	cm.mu.Lock()
	defer cm.mu.Unlock()
	t := cm.tally
	if t.answers == nil {
		t = newTally()
	}
	cm.tally = newTally()
	cm.buckets = map[string]*bucket{}
	return t
}

// late counts a forwarded request the local server answered more than a
// quarter after its drawn total time: the server, not the model, set its
// pace (a few milliseconds over are commitLate's guess of the server's
// time, not the server's queue).
func (cm *conflicts) late() {
	cm.mu.Lock()
	cm.tally.late++
	cm.mu.Unlock()
}

// lateShare is the share of forwarded requests answered late.
func (t proxyTally) lateShare() float64 {
	n := 0
	for _, f := range t.forwarded {
		n += f
	}
	return float64(t.late) / float64(max(n, 1))
}

// hottest is the most any one item was held and the most write units
// any one partition spent.
func (t proxyTally) hottest() (held time.Duration, units float64) {
	for _, d := range t.heldFor {
		held = max(held, d)
	}
	for _, u := range t.units {
		units = max(units, u)
	}
	return held, units
}

// count is the requests of op answered kind.
func (t proxyTally) count(op string, kind answer) int { return t.answers[answerKey{op, kind}] }

// refuse answers a request the model refused with DynamoDB's error, once
// the request's own drawn total time has passed: a refused transaction
// is drawn from the model's cancelled figures.
func (p *modelProxy) refuse(w http.ResponseWriter, r *http.Request, c *call, why *refusal) {
	class := c.op + map[answer]string{answerConflict: " (conflict)", answerThrottled: " (throttled)"}[why.kind]
	p.count(class)
	q, _ := p.model.lookup(c.op, c.items, c.op == "TransactWriteItems")
	total := q.draw(p.variate(class))
	if p.drawn != nil {
		p.drawn(class, total)
	}
	if d := total - time.Since(c.start); d > 0 {
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-t.C:
		case <-r.Context().Done():
			return // its client stopped waiting
		}
	}
	w.Header().Set("Content-Type", "application/x-amz-json-1.0")
	w.WriteHeader(http.StatusBadRequest)
	json.NewEncoder(w).Encode(refusalBody(why))
}

// refusalBody is the JSON of DynamoDB's error answer to a refused request.
func refusalBody(why *refusal) map[string]any {
	const ns = "com.amazonaws.dynamodb.v20120810#"
	if why.reasons != nil {
		reasons := make([]map[string]string, len(why.reasons))
		for i, code := range why.reasons {
			reasons[i] = map[string]string{"Code": code}
			switch code {
			case "TransactionConflict":
				reasons[i]["Message"] = "Transaction is ongoing for the item"
			case "ThrottlingError":
				reasons[i]["Message"] = "Throughput exceeds the current capacity of your table or index."
			}
		}
		return map[string]any{"__type": ns + "TransactionCanceledException", "CancellationReasons": reasons,
			"Message": fmt.Sprintf("Transaction cancelled, please refer cancellation reasons for specific reasons %v", why.reasons)}
	}
	if why.kind == answerThrottled {
		return map[string]any{"__type": ns + "ThrottlingException",
			"message": "Throughput exceeds the current capacity of your table or index.",
			"throttlingReasons": []map[string]string{{ // so the API model spells it for this exception
				"reason":   "TableWriteKeyRangeThroughputExceeded",
				"resource": "arn:aws:dynamodb:us-east-1:000000000000:table/" + why.table,
			}}}
	}
	return map[string]any{"__type": ns + "TransactionConflictException", "message": "Transaction is ongoing for the item"}
}
