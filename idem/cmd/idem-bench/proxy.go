package main

import (
	"bytes"
	"context"
	"encoding/json"
	"hash/fnv"
	"io"
	"log"
	"maps"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"
)

// modelProxy is the model (model.go) in front of the local server: a
// reverse proxy on 127.0.0.1 that forwards each request and holds its
// answer back until the request's total time is one drawn from the model
// for its operation. The delay is that time less what the local server
// took, never negative. A TransactWriteItems is also held before it is
// forwarded (commitLate, afterReads), so that its writes appear late in
// its time, as on DynamoDB, not the moment it arrives. net/http serves each connection
// on its own goroutine, so requests sleep independently: the proxy
// serializes nothing the local server would serve at once.
type modelProxy struct {
	URL string // the endpoint to point a client at

	model *model
	seed  uint64
	srv   *http.Server
	rp    *httputil.ReverseProxy
	tr    *http.Transport

	// conflicts, when set, answers as DynamoDB's conflict and partition
	// rules say (conflicts.go); nil, as for every section but the
	// hot-item one, forwards every request.
	conflicts *conflicts

	mu       sync.Mutex
	rngs     map[string]*rand.Rand // one per request class, so one class's draws do not depend on another's traffic
	counts   map[string]int        // requests by class
	upstream []time.Duration       // the local server's last transactions' times, for commitLate
	reads    map[*call]bool        // GetItems forwarded and not yet answered by the local server

	// drawn, when set, is told each request's drawn total time, for the
	// tests: what the proxy held an answer to, whatever the machine added.
	drawn func(class string, total time.Duration)
}

// call is what the proxy read from a modelled request.
type call struct {
	start time.Time
	op    string
	items int
	// A transaction's variate is drawn when it arrives, to hold it before
	// it is forwarded (commitLate); forwarded is when it was.
	normal    float64
	early     bool
	forwarded time.Time
	// served closes when the local server has answered a GetItem.
	served chan struct{}
	once   sync.Once
	// req is the request as the conflict model read it, when it runs.
	req *modelRequest
}

type callKey struct{}

// dynamoTarget prefixes X-Amz-Target on DynamoDB's own operations;
// DynamoDB Streams' (DynamoDBStreams_20120810.) pass through.
const dynamoTarget = "DynamoDB_20120810."

// startProxy listens on 127.0.0.1 and forwards to upstream. Its draws
// come from seed: a run with the same seed draws the same delays for each
// class of request (in the order its requests reach the proxy). optFns
// set it up before it serves its first request (withConflicts).
func startProxy(m *model, upstream string, seed uint64, optFns ...func(*modelProxy)) (*modelProxy, error) {
	u, err := url.Parse(upstream)
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &modelProxy{URL: "http://" + ln.Addr().String(), model: m, seed: seed, rngs: map[string]*rand.Rand{}, counts: map[string]int{}, reads: map[*call]bool{},
		// Enough idle connections for every request in flight, so that
		// concurrency does not open a connection per request.
		tr: &http.Transport{MaxIdleConnsPerHost: 256}}
	p.rp = &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(u)
			r.Out.Host = r.In.Host // as the client signed it
		},
		ModifyResponse: p.hold,
		Transport:      p.tr,
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			if r.Context().Err() != nil {
				return // its client stopped waiting, as a read beside a transaction makes it: nobody to answer
			}
			log.Printf("idem-bench: model proxy: %v", err)
			w.WriteHeader(http.StatusBadGateway)
		},
	}
	p.srv = &http.Server{Handler: p}
	for _, f := range optFns {
		f(p)
	}
	go p.srv.Serve(ln)
	return p, nil
}

// Close stops the proxy.
func (p *modelProxy) Close() error {
	err := p.srv.Close()
	p.tr.CloseIdleConnections()
	return err
}

func (p *modelProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	op, ok := strings.CutPrefix(r.Header.Get("X-Amz-Target"), dynamoTarget)
	if !ok || !slices.Contains(modelled, op) {
		p.count("undelayed: " + r.Header.Get("X-Amz-Target"))
		p.rp.ServeHTTP(w, r)
		return
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	c := &call{start: start, op: op, items: countItems(op, body)}
	if p.conflicts != nil {
		refused, release := p.conflicts.admit(r.Context(), c, body)
		if refused != nil {
			p.refuse(w, r, c, refused)
			return
		}
		defer release()
	}
	switch op {
	case "GetItem":
		c.served = make(chan struct{})
		p.mu.Lock()
		p.reads[c] = true
		p.mu.Unlock()
		defer p.readServed(c) // if the local server never answered
	case "TransactWriteItems":
		c.normal, c.early = p.variate(op), true
		if !p.commitLate(r.Context(), c) || !p.afterReads(r.Context()) {
			p.count(op + " (called off before it reached the server)")
			return // its client stopped waiting: nothing reaches the local server
		}
	}
	c.forwarded = time.Now()
	p.rp.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), callKey{}, c)))
}

// upstreamGuess is commitLate's estimate of the local server's time for a
// transaction until it has timed upstreamSamples of them.
const (
	upstreamGuess   = 10 * time.Millisecond
	upstreamSamples = 50
)

// commitLate holds a transaction before it reaches the local server: on
// DynamoDB a transaction's writes become visible when it commits, at the
// end of its time (after a prepare phase on every item), so a read sent
// about when it was is served before them; the local server commits the
// moment a request reaches it, and would show them to such a read. The
// hold is the transaction's draw (as committed) less the local server's
// 90th percentile over its last transactions, so that the answer still
// comes back at the drawn time unless the server is slower than that.
// False when the client stopped waiting first.
func (p *modelProxy) commitLate(ctx context.Context, c *call) bool {
	q, _ := p.model.lookup(c.op, c.items, false)
	d := q.draw(c.normal) - p.upstreamP90() - time.Since(c.start)
	if d <= 0 {
		return true
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// afterReads waits until every GetItem forwarded before now has been
// answered by the local server: a read that reached the proxy before a
// transaction is forwarded is served before the transaction commits, as
// on DynamoDB, however the two requests' goroutines are scheduled here.
// False when ctx ends first.
func (p *modelProxy) afterReads(ctx context.Context) bool {
	p.mu.Lock()
	var waits []chan struct{}
	for c := range p.reads {
		waits = append(waits, c.served)
	}
	p.mu.Unlock()
	for _, w := range waits {
		select {
		case <-w:
		case <-ctx.Done():
			return false
		}
	}
	return true
}

// readServed marks a GetItem answered by the local server.
func (p *modelProxy) readServed(c *call) {
	c.once.Do(func() {
		p.mu.Lock()
		delete(p.reads, c)
		p.mu.Unlock()
		close(c.served)
	})
}

// upstreamP90 is the local server's 90th percentile time over its last
// transactions, or upstreamGuess before it has timed enough of them.
func (p *modelProxy) upstreamP90() time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.upstream) < upstreamSamples {
		return upstreamGuess
	}
	return percentile(p.upstream, 0.9)
}

// timedUpstream records a transaction's time on the local server.
func (p *modelProxy) timedUpstream(d time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.upstream = append(p.upstream, d)
	if len(p.upstream) > upstreamSamples {
		p.upstream = p.upstream[1:]
	}
}

// hold waits, once the local server has answered in full, until the
// request's drawn total time has passed.
func (p *modelProxy) hold(resp *http.Response) error {
	c, ok := resp.Request.Context().Value(callKey{}).(*call)
	if !ok {
		return nil
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if c.served != nil {
		p.readServed(c)
	}
	if err != nil {
		return err
	}
	resp.Body = io.NopCloser(bytes.NewReader(body))
	if p.conflicts != nil {
		p.conflicts.answered(c, resp.StatusCode, body)
	}
	cancelled := c.op == "TransactWriteItems" && resp.StatusCode == http.StatusBadRequest && isCancellation(body)
	q, _ := p.model.lookup(c.op, c.items, cancelled)
	class := c.op
	if cancelled {
		class += " (cancelled)"
	}
	p.count(class)
	normal := c.normal
	if c.early {
		p.timedUpstream(time.Since(c.forwarded))
	} else {
		normal = p.variate(class)
	}
	total := q.draw(normal)
	if p.drawn != nil {
		p.drawn(class, total)
	}
	if d := total - time.Since(c.start); d > 0 {
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-t.C:
		case <-resp.Request.Context().Done():
			return resp.Request.Context().Err()
		}
	} else if p.conflicts != nil && -d > total/4 {
		p.conflicts.late()
	}
	return nil
}

// variate draws a standard normal variate from class's generator: an
// operation's, a cancelled transaction's (drawn on arrival, a transaction
// draws from its operation's, committed or not).
func (p *modelProxy) variate(class string) float64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	rng, ok := p.rngs[class]
	if !ok {
		h := fnv.New64a()
		h.Write([]byte(class))
		rng = rand.New(rand.NewPCG(p.seed, h.Sum64()))
		p.rngs[class] = rng
	}
	return rng.NormFloat64()
}

func (p *modelProxy) count(class string) {
	p.mu.Lock()
	p.counts[class]++
	p.mu.Unlock()
}

// Counts are the requests the proxy has seen by class: an operation, with
// " (cancelled)" for a cancelled transaction, or "undelayed: " and the
// X-Amz-Target of one it passed through.
func (p *modelProxy) Counts() map[string]int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return maps.Clone(p.counts)
}

// countItems is a TransactWriteItems' actions or a BatchWriteItem's put and
// delete requests; 1 for anything else, or a body it cannot read.
func countItems(op string, body []byte) int {
	var req struct {
		TransactItems []json.RawMessage
		RequestItems  map[string][]json.RawMessage
	}
	if !byItems(op) || json.Unmarshal(body, &req) != nil {
		return 1
	}
	n := len(req.TransactItems)
	for _, writes := range req.RequestItems {
		n += len(writes)
	}
	return max(n, 1)
}

// isCancellation reports whether an error answer is a
// TransactionCanceledException: its __type, with or without the
// "com.amazonaws.dynamodb.v20120810#" prefix.
func isCancellation(body []byte) bool {
	var e struct {
		Type string `json:"__type"`
	}
	if json.Unmarshal(body, &e) != nil {
		return false
	}
	_, name, _ := strings.Cut(e.Type, "#")
	if name == "" {
		name = e.Type
	}
	return name == "TransactionCanceledException"
}
