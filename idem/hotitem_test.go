package idem_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemkit/kit/idem"
	"github.com/idemkit/kit/idem/idemtest"
)

// overlaps passes every request to the server and notes the transactions
// that were in flight at once while they wrote the item named by marker,
// holding each a moment so that overlaps can happen; it keeps each
// transaction's actions.
type overlaps struct {
	marker string
	mu     sync.Mutex
	now    int
	most   int
	sizes  []int
}

// transactBody is req's body when req is a TransactWriteItems call (req
// keeps a copy to send), else nil.
func transactBody(req *http.Request) ([]byte, error) {
	if !strings.HasSuffix(req.Header.Get("X-Amz-Target"), ".TransactWriteItems") {
		return nil, nil
	}
	body, err := io.ReadAll(req.Body)
	if err != nil {
		return nil, err
	}
	req.Body = io.NopCloser(bytes.NewReader(body))
	return body, nil
}

func (o *overlaps) RoundTrip(req *http.Request) (*http.Response, error) {
	body, err := transactBody(req)
	if err != nil {
		return nil, err
	}
	if body == nil {
		return http.DefaultTransport.RoundTrip(req)
	}
	var in struct{ TransactItems []json.RawMessage }
	_ = json.Unmarshal(body, &in)
	hot := bytes.Contains(body, []byte(o.marker))
	o.mu.Lock()
	o.sizes = append(o.sizes, len(in.TransactItems))
	if hot {
		o.now++
		o.most = max(o.most, o.now)
	}
	o.mu.Unlock()
	if hot {
		time.Sleep(20 * time.Millisecond)
		defer func() {
			o.mu.Lock()
			o.now--
			o.mu.Unlock()
		}()
	}
	return http.DefaultTransport.RoundTrip(req)
}

// TestOneEnvironmentNeverConflictsWithItself: eight deliveries at once in
// one Store (Lambda Managed Instances' concurrent invokes, a batch's
// records run at once) whose effects credit one account send their
// transactions one after another, never two on the item at once, which
// DynamoDB would cancel; deliveries to other accounts are not held up.
func TestOneEnvironmentNeverConflictsWithItself(t *testing.T) {
	e := newEnv(t)
	watch := &overlaps{marker: `"acc-hot"`}
	store, err := idem.New(idemtest.Client(idemtest.Endpoint(t), func(o *dynamodb.Options) { o.HTTPClient = &http.Client{Transport: watch} }),
		e.processed, func(o *idem.Options) { o.WritesInOneRegion = true })
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for i := range 8 {
		for _, account := range []string{"acc-hot", fmt.Sprint("acc-", i)} {
			wg.Go(func() {
				_, err := store.Process(context.Background(), idem.Message{ID: account + "/" + fmt.Sprint(i), Source: "hot"},
					func(context.Context, idem.Message) (idem.Effect, error) {
						return idem.Effect{Writes: []types.TransactWriteItem{e.credit(account, 1)}}, nil
					})
				if err != nil {
					t.Error(err)
				}
			})
		}
	}
	wg.Wait()
	if watch.most != 1 {
		t.Errorf("want the hot account's transactions one at a time, got %d at once", watch.most)
	}
	if got := e.balance(t, "acc-hot"); got != 8 {
		t.Errorf("balance: want 8, got %d", got)
	}
}

// TestTenCreditsToOneAccountInOneTransaction: a batch of ten credits to
// one account is one transaction of eleven actions, the ten claims and
// their credits' sum.
func TestTenCreditsToOneAccountInOneTransaction(t *testing.T) {
	e := newEnv(t)
	watch := &overlaps{marker: "-"}
	store, err := idem.New(idemtest.Client(idemtest.Endpoint(t), func(o *dynamodb.Options) { o.HTTPClient = &http.Client{Transport: watch} }),
		e.processed, func(o *idem.Options) { o.WritesInOneRegion = true })
	if err != nil {
		t.Fatal(err)
	}
	var batch []idem.Message
	for i := range 10 {
		batch = append(batch, idem.Message{ID: fmt.Sprint("c", i), Source: "credits", Payload: []byte{byte(i)}})
	}
	out := store.ProcessBatch(context.Background(), batch, func(_ context.Context, i int, _ idem.Message) (idem.Effect, error) {
		return idem.Effect{Writes: []types.TransactWriteItem{e.credit("acc-1", 1<<i)}}, nil
	})
	for i, r := range out {
		if r.Err != nil || r.Result.Outcome != idem.Processed {
			t.Errorf("message %d: want Processed, got %v %v", i, r.Result.Outcome, r.Err)
		}
	}
	if len(watch.sizes) != 1 || watch.sizes[0] != 11 {
		t.Errorf("want one transaction of 11 actions, got %v", watch.sizes)
	}
	if got := e.balance(t, "acc-1"); got != 1023 {
		t.Errorf("balance: want 1023, got %d", got)
	}
	if n := e.claimCount(t); n != 10 {
		t.Errorf("want 10 claims, got %d", n)
	}
}

// refusedWhileOthersWait refuses the first delivery's transactions for
// contention until the second delivery's transaction arrives or the hold
// is over, and logs the order in which the two were sent.
type refusedWhileOthersWait struct {
	started chan struct{} // closed at the first refusal
	hold    time.Duration

	mu       sync.Mutex
	until    time.Time
	second   bool
	sends    []string
	refusals int
}

func (r *refusedWhileOthersWait) RoundTrip(req *http.Request) (*http.Response, error) {
	body, err := transactBody(req)
	if err != nil {
		return nil, err
	}
	if body == nil {
		return http.DefaultTransport.RoundTrip(req)
	}
	r.mu.Lock()
	switch {
	case bytes.Contains(body, []byte("second-delivery")):
		r.second = true
		r.sends = append(r.sends, "second")
	case r.refusals == 0 || !r.second && time.Now().Before(r.until):
		if r.refusals++; r.refusals == 1 {
			r.until = time.Now().Add(r.hold)
			close(r.started)
		}
		r.mu.Unlock()
		return &http.Response{StatusCode: 400, Header: http.Header{"Content-Type": {"application/x-amz-json-1.0"}}, Request: req,
			Body: io.NopCloser(strings.NewReader(`{"__type":"com.amazonaws.dynamodb.v20120810#TransactionCanceledException","Message":"Transaction cancelled","CancellationReasons":[{"Code":"None"},{"Code":"TransactionConflict"}]}`))}, nil
	default:
		r.sends = append(r.sends, "first")
	}
	r.mu.Unlock()
	return http.DefaultTransport.RoundTrip(req)
}

// TestContendedDeliveryHoldsItsItemsThroughItsBackoff: a delivery whose
// transaction another environment's contention refused keeps its items
// while it backs off, so a second delivery here on the same account
// waits its turn instead of sending into the same contention (and paying
// for the refusal): the first commits before the second sends.
func TestContendedDeliveryHoldsItsItemsThroughItsBackoff(t *testing.T) {
	e := newEnv(t)
	hot := &refusedWhileOthersWait{started: make(chan struct{}), hold: 500 * time.Millisecond}
	store, err := idem.New(idemtest.Client(idemtest.Endpoint(t), func(o *dynamodb.Options) { o.HTTPClient = &http.Client{Transport: hot} }),
		e.processed, func(o *idem.Options) {
			o.WritesInOneRegion, o.BackoffBase, o.BackoffMax = true, time.Millisecond, 20*time.Millisecond
		})
	if err != nil {
		t.Fatal(err)
	}
	deliver := func(id string) {
		_, err := store.Process(context.Background(), idem.Message{ID: id, Source: "hot"},
			func(context.Context, idem.Message) (idem.Effect, error) {
				return idem.Effect{Writes: []types.TransactWriteItem{e.credit("acc-hot", 1)}}, nil
			})
		if err != nil {
			t.Errorf("%s: %v", id, err)
		}
	}
	var wg sync.WaitGroup
	wg.Go(func() { deliver("first-delivery") })
	<-hot.started
	wg.Go(func() { deliver("second-delivery") })
	wg.Wait()
	if want := []string{"first", "second"}; !slices.Equal(hot.sends, want) {
		t.Errorf("transactions sent after the refusal: want %v, got %v (%d refusals)", want, hot.sends, hot.refusals)
	}
	if got := e.balance(t, "acc-hot"); got != 2 {
		t.Errorf("balance: want 2, got %d", got)
	}
}

// refusedUntilReleased refuses the transactions naming marker for
// contention until released is closed.
type refusedUntilReleased struct {
	marker   string
	refused  chan struct{} // closed at the first refusal
	released chan struct{}
	once     sync.Once
}

func (r *refusedUntilReleased) RoundTrip(req *http.Request) (*http.Response, error) {
	body, err := transactBody(req)
	if err != nil {
		return nil, err
	}
	select {
	case <-r.released:
	default:
		if bytes.Contains(body, []byte(r.marker)) {
			r.once.Do(func() { close(r.refused) })
			return &http.Response{StatusCode: 400, Header: http.Header{"Content-Type": {"application/x-amz-json-1.0"}}, Request: req,
				Body: io.NopCloser(strings.NewReader(`{"__type":"com.amazonaws.dynamodb.v20120810#TransactionCanceledException","Message":"Transaction cancelled","CancellationReasons":[{"Code":"None"},{"Code":"TransactionConflict"}]}`))}, nil
		}
	}
	return http.DefaultTransport.RoundTrip(req)
}

// TestWaitForHeldItemsEndsBeforeTheDeadline: a delivery kept waiting by
// another here that holds their item through a long contention gives up
// while its time for contention lasts (a *ContendedError, before its
// context's deadline), so its caller still has time to answer; nothing of
// it commits, and the holder commits once the contention is over.
func TestWaitForHeldItemsEndsBeforeTheDeadline(t *testing.T) {
	e := newEnv(t)
	hot := &refusedUntilReleased{marker: "holder-delivery", refused: make(chan struct{}), released: make(chan struct{})}
	store, err := idem.New(idemtest.Client(idemtest.Endpoint(t), func(o *dynamodb.Options) { o.HTTPClient = &http.Client{Transport: hot} }),
		e.processed, func(o *idem.Options) {
			o.WritesInOneRegion, o.BackoffBase, o.BackoffMax = true, time.Millisecond, 20*time.Millisecond
		})
	if err != nil {
		t.Fatal(err)
	}
	credit := func(context.Context, idem.Message) (idem.Effect, error) {
		return idem.Effect{Writes: []types.TransactWriteItem{e.credit("acc-hot", 1)}}, nil
	}
	var wg sync.WaitGroup
	wg.Go(func() {
		if _, err := store.Process(context.Background(), idem.Message{ID: "holder-delivery", Source: "hot"}, credit); err != nil {
			t.Errorf("holder: %v", err)
		}
	})
	<-hot.refused
	ctx, cancel := context.WithTimeout(context.Background(), 800*time.Millisecond)
	defer cancel()
	_, err = store.Process(ctx, idem.Message{ID: "waiting-delivery", Source: "hot"}, credit)
	early := ctx.Err() == nil
	close(hot.released)
	wg.Wait()
	if ce, ok := errors.AsType[*idem.ContendedError](err); !ok || !early {
		t.Errorf("want a *ContendedError before the deadline, got %v (%T), the deadline passed: %v", err, ce, !early)
	}
	if got := e.balance(t, "acc-hot"); got != 1 {
		t.Errorf("balance: want 1, the holder's, got %d", got)
	}
}
