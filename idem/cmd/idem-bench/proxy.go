package main

import (
	"bytes"
	"context"
	"encoding/json"
	"hash/fnv"
	"io"
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
// took, never negative. net/http serves each connection on its own
// goroutine, so requests sleep independently: the proxy serializes
// nothing the local server would serve at once.
type modelProxy struct {
	URL string // the endpoint to point a client at

	model *model
	seed  uint64
	srv   *http.Server
	rp    *httputil.ReverseProxy
	tr    *http.Transport

	mu     sync.Mutex
	rngs   map[string]*rand.Rand // one per request class, so one class's draws do not depend on another's traffic
	counts map[string]int        // requests by class

	// drawn, when set, is told each request's drawn total time, for the
	// tests: what the proxy held an answer to, whatever the machine added.
	drawn func(class string, total time.Duration)
}

// call is what the proxy read from a modelled request.
type call struct {
	start time.Time
	op    string
	items int
}

type callKey struct{}

// dynamoTarget prefixes X-Amz-Target on DynamoDB's own operations;
// DynamoDB Streams' (DynamoDBStreams_20120810.) pass through.
const dynamoTarget = "DynamoDB_20120810."

// startProxy listens on 127.0.0.1 and forwards to upstream. Its draws
// come from seed: a run with the same seed draws the same delays for each
// class of request (in the order its requests reach the proxy).
func startProxy(m *model, upstream string, seed uint64) (*modelProxy, error) {
	u, err := url.Parse(upstream)
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &modelProxy{URL: "http://" + ln.Addr().String(), model: m, seed: seed, rngs: map[string]*rand.Rand{}, counts: map[string]int{},
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
	}
	p.srv = &http.Server{Handler: p}
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
	p.rp.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), callKey{}, c)))
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
	if err != nil {
		return err
	}
	resp.Body = io.NopCloser(bytes.NewReader(body))
	cancelled := c.op == "TransactWriteItems" && resp.StatusCode == http.StatusBadRequest && isCancellation(body)
	q, _ := p.model.lookup(c.op, c.items, cancelled)
	class := c.op
	if cancelled {
		class += " (cancelled)"
	}
	total := q.draw(p.normal(class))
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
	}
	return nil
}

// normal draws a standard normal variate from class's generator, and
// counts the request.
func (p *modelProxy) normal(class string) float64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.counts[class]++
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
