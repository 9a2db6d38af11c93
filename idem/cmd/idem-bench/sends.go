package main

// What became of a transaction this kit calls off. Since the read of a
// claim goes out beside the transaction (idem/readfirst.go), a duplicate
// whose read answers first calls its transaction off: before it was
// started (the read came back while the handler ran), after the SDK
// started it but before it was handed to HTTP (nothing reaches DynamoDB),
// or in flight (it has reached DynamoDB, which runs it all the same and,
// its claim's condition failing, cancels it). idemtest.CallCounter counts
// a call when the SDK starts it; sendCounter counts what reached HTTP.

import (
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

// sends is a sendCounter's counts at one time.
type sends struct {
	sent, calledOff map[string]int
	conns           int
}

// Option installs the counter on a client, around its HTTP client.
func (c *sendCounter) Option(o *dynamodb.Options) {
	o.HTTPClient = &countingHTTP{next: o.HTTPClient, c: c}
}

func (c *sendCounter) snapshot() sends {
	c.mu.Lock()
	defer c.mu.Unlock()
	return sends{maps.Clone(c.sent), maps.Clone(c.calledOff), c.conns}
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
	return sends{diff(now.sent, before.sent), diff(now.calledOff, before.calledOff), now.conns - before.conns}
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
	}
	return txAnswered, true
}
