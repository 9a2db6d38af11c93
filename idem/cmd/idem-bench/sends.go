package main

// What became of a duplicate's transaction when its read of the claim
// answered it. Since the read goes out beside the transaction
// (idem/readfirst.go), a duplicate whose read answers first never starts
// its transaction (the read came back while the handler ran), or leaves
// it to run to its end unwaited for (DynamoDB runs it, and its claim's
// condition cancels it; the kit does not cut it short, which would close
// its connection). idemtest.CallCounter counts a call when the SDK starts
// it; sendCounter counts what reached HTTP, and a sendMark on a
// delivery's context what of its own was still unanswered when the
// delivery answered.

import (
	"context"
	"maps"
	"net/http"
	"net/http/httptrace"
	"strings"
	"sync"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
)

// sendCounter counts, by operation, the requests a client hands its HTTP
// client with their context still live (sent), and those of them whose
// context was done before their answer came (called off in flight); and
// the connections opened, since Go's transport closes a connection whose
// request is called off in flight, and the next request opens another.
type sendCounter struct {
	mu        sync.Mutex
	sent      map[string]int
	calledOff map[string]int
	conns     int
}

// sends is a sendCounter's counts at one time, and, for one delivery, its
// requests still unanswered when it answered (unwaited).
type sends struct {
	sent, calledOff map[string]int
	conns           int
	unwaited        map[string]int
}

// sendMark counts one delivery's requests, sent and answered, by
// operation: a request the SDK sends carries the delivery's context, and
// the context's values, whatever the kit detaches from it.
type sendMark struct {
	mu             sync.Mutex
	sent, answered map[string]int
}

type sendMarkKey struct{}

// withSendMark is ctx carrying m.
func withSendMark(ctx context.Context, m *sendMark) context.Context {
	return context.WithValue(ctx, sendMarkKey{}, m)
}

func (m *sendMark) count(op string, answered bool) {
	if m == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.sent == nil {
		m.sent, m.answered = map[string]int{}, map[string]int{}
	}
	if answered {
		m.answered[op]++
	} else {
		m.sent[op]++
	}
}

// unwaited is the delivery's requests sent and not answered yet.
func (m *sendMark) unwaited() map[string]int {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := map[string]int{}
	for op, n := range m.sent {
		if d := n - m.answered[op]; d > 0 {
			out[op] = d
		}
	}
	return out
}

// Option installs the counter on a client, around its HTTP client.
func (c *sendCounter) Option(o *dynamodb.Options) {
	o.HTTPClient = &countingHTTP{next: o.HTTPClient, c: c}
}

func (c *sendCounter) snapshot() sends {
	c.mu.Lock()
	defer c.mu.Unlock()
	return sends{sent: maps.Clone(c.sent), calledOff: maps.Clone(c.calledOff), conns: c.conns}
}

// since is what was counted after before.
func (c *sendCounter) since(before sends) sends {
	now := c.snapshot()
	diff := func(a, b map[string]int) map[string]int {
		out := map[string]int{}
		for op, n := range a {
			if d := n - b[op]; d > 0 {
				out[op] = d
			}
		}
		return out
	}
	return sends{sent: diff(now.sent, before.sent), calledOff: diff(now.calledOff, before.calledOff), conns: now.conns - before.conns}
}

func (c *sendCounter) add(m *map[string]int, op string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if *m == nil {
		*m = map[string]int{}
	}
	(*m)[op]++
}

// countingHTTP is a client's HTTP client with a sendCounter around it.
type countingHTTP struct {
	next dynamodb.HTTPClient
	c    *sendCounter
}

func (h *countingHTTP) Do(req *http.Request) (*http.Response, error) {
	ctx := req.Context()
	if ctx.Err() != nil { // called off before it was sent: the transport sends nothing
		return h.next.Do(req)
	}
	op := strings.TrimPrefix(req.Header.Get("X-Amz-Target"), dynamoTarget)
	h.c.add(&h.c.sent, op)
	mark, _ := ctx.Value(sendMarkKey{}).(*sendMark)
	mark.count(op, false)
	defer mark.count(op, true)
	trace := &httptrace.ClientTrace{GotConn: func(info httptrace.GotConnInfo) {
		if !info.Reused {
			h.c.mu.Lock()
			h.c.conns++
			h.c.mu.Unlock()
		}
	}}
	resp, err := h.next.Do(req.WithContext(httptrace.WithClientTrace(ctx, trace)))
	if err != nil && ctx.Err() != nil {
		h.c.add(&h.c.calledOff, op)
	}
	return resp, err
}

// txFate is what became of a duplicate's transaction when the duplicate
// also read its claim.
type txFate int8

const (
	txNotStarted txFate = iota // the read answered while the handler ran
	txNotSent                  // started, called off before it reached HTTP
	txCalledOff                // sent, called off in flight: DynamoDB ran it
	txAnswered                 // sent and answered (cancelled by its claim's condition, or the read found nothing final)
	txUnwaited                 // sent, left to run: the read answered first; DynamoDB ran it, its condition cancelling it
	txFates
)

// fateOf is a delivery's transaction's fate from its counted calls and
// sends; ok is false for a delivery that did not read its claim.
func fateOf(ops map[string]int, s sends) (f txFate, ok bool) {
	if ops["GetItem"] == 0 {
		return 0, false
	}
	switch {
	case ops["TransactWriteItems"] == 0:
		return txNotStarted, true
	case s.sent["TransactWriteItems"] == 0:
		return txNotSent, true
	case s.calledOff["TransactWriteItems"] > 0:
		return txCalledOff, true
	case s.unwaited["TransactWriteItems"] > 0:
		return txUnwaited, true
	}
	return txAnswered, true
}
