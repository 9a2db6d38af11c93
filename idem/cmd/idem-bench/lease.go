package main

import (
	"context"
	"errors"
	"fmt"
	"log"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemkit/kit/idem"
	"github.com/idemkit/kit/idem/idemtest"
)

// The lease mode (Store.ProcessLeased) beside the one-transaction mode
// (Store.Process), with a handler that calls another service before its
// effect can be described, as a payment API call is. The two differ in
// what that service sees when duplicates arrive at once, which is what a
// lease is for, and in a call to DynamoDB per first delivery.

// external stands in for a service that deduplicates an Idempotency-Key,
// as a payment API does: each call takes delay, and the same key gets the
// same receipt back. It counts the calls it receives: the lease exists to
// keep them to one per message.
type external struct {
	delay time.Duration

	mu       sync.Mutex
	calls    int
	receipts map[string]string
}

func newExternal(delay time.Duration) *external {
	return &external{delay: delay, receipts: map[string]string{}}
}

func (x *external) call(ctx context.Context, key string) (string, error) {
	x.mu.Lock()
	x.calls++
	x.mu.Unlock()
	select {
	case <-time.After(x.delay):
	case <-ctx.Done():
		return "", ctx.Err()
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	r, ok := x.receipts[key]
	if !ok {
		r = fmt.Sprintf("rcpt_%d", len(x.receipts)+1)
		x.receipts[key] = r
	}
	return r, nil
}

// counts are the calls received so far and the keys they carried.
func (x *external) counts() (calls, keys int) {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.calls, len(x.receipts)
}

// leaseMode is one line of the lease table.
type leaseMode struct {
	name       string
	leased     bool // ProcessLeased, else Process
	cacheSize  int  // Options.CacheSize
	concurrent bool // also measured under concurrent duplicates
}

var leaseModes = []leaseMode{
	{name: "one transaction (`Process`), the call inside the handler", concurrent: true},
	{name: "lease (`ProcessLeased`)", leased: true, concurrent: true},
	{name: "lease, with the claim cache (CacheSize 1000)", leased: true, cacheSize: 1000},
}

// leasePass is one latency pass's figures, per message.
type leasePass struct {
	calls    float64
	ops      map[string]float64 // calls by operation
	external float64            // calls the external service received
	p50, p99 time.Duration
}

// leaseRow is what one mode measured.
type leaseRow struct {
	mode                   leaseMode
	first, dup             []leasePass // by server
	extraCalls, doubles    int         // under concurrent duplicates, when mode.concurrent
	dupMessages, dupCalled int         // messages delivered at once, and their deliveries
}

// leaseResult is the lease section of a run.
type leaseResult struct {
	external   time.Duration // each external call's latency
	envs       int           // environments delivering each message at once
	latN, dupN int
	rows       []leaseRow
}

// redeliverAfter is how long a delivery that failed retryably (a lease
// held by another, a transaction conflict) waits before it is delivered
// again: SQS waits out the visibility timeout, shortened here.
const redeliverAfter = 10 * time.Millisecond

// leaseEnv is one mode's tables, the service its handler calls, and its
// environments: a Store each, sharing nothing but the tables.
type leaseEnv struct {
	mode   leaseMode
	row    int // its mode's, in leaseModes
	server int // its server's, in the report's
	su     setup
	ext    *external
	stores []*idem.Store
}

func newLeaseEnv(ctx context.Context, endpoint string, mode leaseMode, delay time.Duration, envs int) (*leaseEnv, error) {
	e := &leaseEnv{mode: mode, su: setup{calls: &idemtest.CallCounter{}}, ext: newExternal(delay)}
	e.su.client = idemtest.Client(endpoint, e.su.calls.Option)
	processed, err := idemtest.CreateTableContext(ctx, e.su.client, idemtest.Table{Name: "bench-lease-processed", HashKey: "pk", TTLAttribute: "expiresAt"})
	if err != nil {
		return nil, err
	}
	if e.su.accounts, err = idemtest.CreateTableContext(ctx, e.su.client, idemtest.Table{Name: "bench-lease-accounts", HashKey: "account"}); err != nil {
		return nil, err
	}
	if !mode.concurrent {
		envs = 1
	}
	for range envs {
		store, err := idem.New(e.su.client, processed, quietStore, func(o *idem.Options) { o.CacheSize = mode.cacheSize })
		if err != nil {
			return nil, err
		}
		e.stores = append(e.stores, store)
	}
	return e, nil
}

// handler calls the external service with the message's key, then credits
// m's account with the receipt as its response. Under a lease the key is
// Lease.Key; without one it is the same claim key, which is what a handler
// forwards today: unsafe, as two deliveries may call at once.
func (e *leaseEnv) handler(m message) idem.Handler {
	return func(ctx context.Context, msg idem.Message) (idem.Effect, error) {
		key := msg.Source + "#" + msg.ID // the claim key, as the Store makes it (no KeyPrefix)
		if l, ok := idem.LeaseFromContext(ctx); ok {
			key = l.Key
		}
		receipt, err := e.ext.call(ctx, key)
		if err != nil {
			return idem.Effect{}, err
		}
		return idem.Effect{Writes: []types.TransactWriteItem{{Update: creditUpdate(e.su.accounts, m)}}, Response: []byte(receipt)}, nil
	}
}

func (e *leaseEnv) deliver(ctx context.Context, store *idem.Store, m message) error {
	msg := idem.Message{ID: m.id, Source: "bench", Payload: fmt.Appendf(nil, `{"account":%q,"cents":%d}`, m.account, m.cents)}
	var err error
	if e.mode.leased {
		_, err = store.ProcessLeased(ctx, msg, e.handler(m))
	} else {
		_, err = store.Process(ctx, msg, e.handler(m))
	}
	return err
}

// redeliver delivers m through store until a delivery succeeds, waiting
// redeliverAfter after each retryable failure, as the queue would; it
// returns how many deliveries it took.
func (e *leaseEnv) redeliver(ctx context.Context, store *idem.Store, m message) (int, error) {
	var err error
	for n := 1; n <= 300; n++ {
		if err = e.deliver(ctx, store, m); err == nil || !errors.Is(err, idem.ErrRetryable) {
			return n, err
		}
		time.Sleep(redeliverAfter)
	}
	return 0, fmt.Errorf("%s never succeeded: %w", m.id, err)
}

// runLease measures every lease mode: latency and calls with n messages
// delivered one at a time, twice each, on every server, then, on the
// local server, dupN messages each delivered at once from envs
// environments.
func runLease(ctx context.Context, servers []server, delay time.Duration, envs, latN, dupN int) (*leaseResult, error) {
	res := &leaseResult{external: delay, envs: envs, latN: latN, dupN: dupN}
	var es []*leaseEnv
	for j, sv := range servers {
		for k, mode := range leaseModes {
			e, err := newLeaseEnv(ctx, sv.endpoint, mode, delay, envs)
			if err != nil {
				return nil, err
			}
			e.row, e.server = k, j
			es = append(es, e)
		}
	}
	for _, mode := range leaseModes {
		res.rows = append(res.rows, leaseRow{mode: mode, first: make([]leasePass, len(servers)), dup: make([]leasePass, len(servers))})
	}
	if err := leaseLatencies(ctx, es, res.rows, latN); err != nil {
		return nil, err
	}
	log.Printf("idem-bench: lease latency done")
	for k, e := range es[:len(leaseModes)] {
		if !e.mode.concurrent {
			continue
		}
		if err := concurrentDuplicates(ctx, e, &res.rows[k], fmt.Sprint("l", k), dupN); err != nil {
			return nil, fmt.Errorf("%s: concurrent duplicates: %w", e.mode.name, err)
		}
	}
	log.Printf("idem-bench: lease concurrent duplicates done")
	return res, nil
}

// leaseLatencies delivers n new messages one after another, then each
// again, the modes and servers taking turns as in latencies, and fills
// each row's first and dup passes.
func leaseLatencies(ctx context.Context, es []*leaseEnv, rows []leaseRow, n int) error {
	for pass := range 2 {
		took := make([][]time.Duration, len(es))
		before := make([]int, len(es))
		for k, e := range es {
			e.su.calls.Reset()
			before[k], _ = e.ext.counts()
		}
		for i := range n {
			for k, e := range es {
				m := message{id: fmt.Sprintf("l%d-lat-%d", k, i), account: fmt.Sprintf("lat-%d", i%10), cents: 1}
				start := time.Now()
				if err := e.deliver(ctx, e.stores[0], m); err != nil {
					return fmt.Errorf("%s: latency pass %d, %s: %w", e.mode.name, pass, m.id, err)
				}
				took[k] = append(took[k], time.Since(start))
			}
		}
		for k, e := range es {
			calls, _ := e.ext.counts()
			p := leasePass{calls: float64(messageCalls(e.su.calls)) / float64(n), ops: map[string]float64{},
				external: float64(calls-before[k]) / float64(n), p50: percentile(took[k], 0.5), p99: percentile(took[k], 0.99)}
			for _, op := range []string{"GetItem", "PutItem", "UpdateItem", "DeleteItem", "TransactWriteItems"} {
				p.ops[op] = float64(e.su.calls.Count(op)) / float64(n)
			}
			if pass == 0 {
				rows[e.row].first[e.server] = p
			} else {
				rows[e.row].dup[e.server] = p
			}
		}
	}
	return nil
}

// concurrentDuplicates delivers each of n new messages at once from every
// environment of e, each redelivering until it succeeds, one message after
// another, and counts the calls the external service received beyond one
// per message and the messages credited more than once.
func concurrentDuplicates(ctx context.Context, e *leaseEnv, r *leaseRow, prefix string, n int) error {
	calls0, keys0 := e.ext.counts()
	for i := range n {
		m := message{id: fmt.Sprintf("%s-dup-%d", prefix, i), account: fmt.Sprintf("%s-dup-%d", prefix, i), cents: 1}
		start := make(chan struct{})
		var (
			wg         sync.WaitGroup
			mu         sync.Mutex
			deliveries int
			firstErr   error
		)
		for _, store := range e.stores {
			wg.Go(func() {
				<-start
				d, err := e.redeliver(ctx, store, m)
				mu.Lock()
				deliveries += d
				if firstErr == nil {
					firstErr = err
				}
				mu.Unlock()
			})
		}
		close(start)
		wg.Wait()
		if firstErr != nil {
			return firstErr
		}
		r.dupCalled += deliveries
	}
	calls, keys := e.ext.counts()
	r.dupMessages, r.extraCalls = n, (calls-calls0)-(keys-keys0)
	var err error
	r.doubles, err = countDoubles(ctx, e.su, prefix+"-dup", n)
	return err
}
