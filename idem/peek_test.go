package idem_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemkit/kit/idem"
	"github.com/idemkit/kit/idem/idemtest"
)

// slowCredit is the credit handler taking a while, as a handler that
// decodes and checks its message does: long enough for a read sent beside
// it to answer first, so that the test sees no transaction.
func (e *env) slowCredit() idem.Handler {
	h := e.creditHandler(nil)
	return func(ctx context.Context, m idem.Message) (idem.Effect, error) {
		time.Sleep(200 * time.Millisecond)
		return h(ctx, m)
	}
}

// TestDuplicatesInNumbersCostARead: once a sender's recent deliveries are
// mostly duplicates, a duplicate costs one GetItem and, when the read
// answers while the handler runs, no transaction; a first delivery a
// GetItem and its transaction; below the threshold, or with ReadFirstAbove
// negative, no read is made. A read that finds another payload's claim is
// key reuse, as the claim's condition would say.
func TestDuplicatesInNumbersCostARead(t *testing.T) {
	for _, tc := range []struct {
		name       string
		above      float64
		wantReads  bool
		dupGets    int // calls of a late duplicate
		dupTxs     int
		firstGets  int // calls of a late first delivery
		firstTxs   int
		reuseCalls int
	}{
		{"the default", 0, true, 1, 0, 1, 1, 1},
		{"never read first", -1, false, 0, 1, 0, 1, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, func(o *idem.Options) { o.ReadFirstAbove = tc.above })
			ctx := context.Background()
			deliverWith := func(h idem.Handler, id string, payload string) (idem.Result, int, int, error) {
				e.calls.Reset()
				res, err := e.store.Process(ctx, idem.Message{ID: id, Source: "storm", Payload: []byte(payload)}, h)
				return res, e.calls.Count("GetItem"), e.calls.Count("TransactWriteItems"), err
			}
			deliver := func(id string, payload string) (idem.Result, int, int, error) {
				return deliverWith(e.slowCredit(), id, payload)
			}
			// A storm: each message delivered three times.
			for i := range 12 {
				for range 3 {
					if _, _, _, err := deliverWith(e.creditHandler(nil), fmt.Sprint("m-", i), "p"); err != nil {
						t.Fatal(err)
					}
				}
			}
			res, gets, txs, err := deliver("m-0", "p")
			t.Logf("a duplicate in the storm: %s, %d GetItem, %d TransactWriteItems", res.Outcome, gets, txs)
			if err != nil || res.Outcome != idem.Duplicate || gets != tc.dupGets || txs != tc.dupTxs {
				t.Errorf("a duplicate: want Duplicate with %d GetItem and %d transactions, got %v %v, %d and %d", tc.dupGets, tc.dupTxs, res.Outcome, err, gets, txs)
			}
			res, gets, txs, err = deliver("new", "p")
			if err != nil || res.Outcome != idem.Processed || gets != tc.firstGets || txs != tc.firstTxs {
				t.Errorf("a first delivery: want Processed with %d GetItem and %d transactions, got %v %v, %d and %d", tc.firstGets, tc.firstTxs, res.Outcome, err, gets, txs)
			}
			_, gets, txs, err = deliver("m-1", "another")
			if !errors.Is(err, idem.ErrKeyReuse) || gets+txs != tc.reuseCalls {
				t.Errorf("key reuse: want a *KeyReuseError after %d call, got %v after %d", tc.reuseCalls, err, gets+txs)
			}
			if got := e.balance(t, "acc-9"); got != 13*500 {
				t.Errorf("balance: want %d, got %d", 13*500, got)
			}
		})
	}
}

// TestReadFirstOnlyWhenDuplicatesAreMany: a sender whose deliveries are
// all first deliveries makes no read.
func TestReadFirstOnlyWhenDuplicatesAreMany(t *testing.T) {
	e := newEnv(t)
	for i := range 20 {
		e.calls.Reset()
		if _, err := e.store.Process(context.Background(), idem.Message{ID: fmt.Sprint("m-", i), Source: "calm"}, e.creditHandler(nil)); err != nil {
			t.Fatal(err)
		}
		if n := e.calls.Count("GetItem"); n != 0 {
			t.Fatalf("delivery %d: want no GetItem, got %d", i, n)
		}
	}
}

// TestRedeliveriesReadFirstDeliveriesDoNot: when the sender counts its
// deliveries (Message.Attempt, SQS's receive count), a redelivery storm
// makes the redeliveries read their claim first, and only them: a first
// attempt goes straight to its transaction, as does a duplicate the sender
// counts as a first attempt (a producer's resend), which its claim's
// condition still answers.
func TestRedeliveriesReadFirstDeliveriesDoNot(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	deliverWith := func(h idem.Handler, id string, attempt int) (idem.Outcome, int, int) {
		t.Helper()
		e.calls.Reset()
		res, err := e.store.Process(ctx, idem.Message{ID: id, Source: "queue", Payload: []byte("p"), Attempt: attempt}, h)
		if err != nil {
			t.Fatal(err)
		}
		return res.Outcome, e.calls.Count("GetItem"), e.calls.Count("TransactWriteItems")
	}
	for i := range 12 { // a redelivery storm: each message received 3 times
		for attempt := 1; attempt <= 3; attempt++ {
			deliverWith(e.creditHandler(nil), fmt.Sprint("m-", i), attempt)
		}
	}
	deliver := func(id string, attempt int) (idem.Outcome, int, int) {
		t.Helper()
		return deliverWith(e.slowCredit(), id, attempt)
	}
	for _, tc := range []struct {
		name      string
		id        string
		attempt   int
		want      idem.Outcome
		gets, txs int
	}{
		{"a first attempt", "new", 1, idem.Processed, 0, 1},
		{"a redelivery", "m-0", 2, idem.Duplicate, 1, 0},
		{"a fourth receive, a redelivery too", "m-3", 4, idem.Duplicate, 1, 0},
		{"a count below 1, not counted", "m-4", -1, idem.Duplicate, 0, 1},
		{"a producer's resend, counted as a first attempt", "m-1", 1, idem.Duplicate, 0, 1},
		{"a sender that does not count, its own share", "m-2", 0, idem.Duplicate, 0, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, gets, txs := deliver(tc.id, tc.attempt)
			if got != tc.want || gets != tc.gets || txs != tc.txs {
				t.Errorf("want %v with %d GetItem and %d transactions, got %v with %d and %d", tc.want, tc.gets, tc.txs, got, gets, txs)
			}
		})
	}
}

// slowTransactions holds each TransactWriteItems back before sending it,
// and notes those called off meanwhile: DynamoDB's transactions are slower
// than its reads, which the local server does not show.
type slowTransactions struct {
	hold      time.Duration
	mu        sync.Mutex
	calledOff int
	sent      int
}

func (s *slowTransactions) RoundTrip(req *http.Request) (*http.Response, error) {
	if strings.HasSuffix(req.Header.Get("X-Amz-Target"), ".TransactWriteItems") {
		s.mu.Lock()
		hold := s.hold
		s.mu.Unlock()
		select {
		case <-time.After(hold):
		case <-req.Context().Done():
			s.mu.Lock()
			s.calledOff++
			s.mu.Unlock()
			return nil, req.Context().Err()
		}
		s.mu.Lock()
		s.sent++
		s.mu.Unlock()
	}
	return http.DefaultTransport.RoundTrip(req)
}

// TestReadBesideTheTransaction: in a storm the read goes out beside the
// transaction. A duplicate is answered by the read while its transaction
// is still held back; the transaction is not cut short (that would close
// its connection) but runs to its end unwaited for and fails its claim's
// condition. A first delivery's read finds nothing and the transaction
// answers; a key reuse the read finds is refused as the claim's condition
// would refuse it. One credit per message.
func TestReadBesideTheTransaction(t *testing.T) {
	e := newEnv(t)
	slow := &slowTransactions{}
	store, err := idem.New(idemtest.Client(idemtest.Endpoint(t), func(o *dynamodb.Options) { o.HTTPClient = &http.Client{Transport: slow} }),
		e.processed, func(o *idem.Options) { o.WritesInOneRegion = true })
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for i := range 12 { // a storm, each message three times: the sender's share of duplicates rises
		for range 3 {
			if _, err := store.Process(ctx, idem.Message{ID: fmt.Sprint("m-", i), Source: "storm", Payload: []byte("p")}, e.creditHandler(nil)); err != nil {
				t.Fatal(err)
			}
		}
	}
	counts := func() (int, int) {
		slow.mu.Lock()
		defer slow.mu.Unlock()
		return slow.sent, slow.calledOff
	}
	for _, tc := range []struct {
		name     string
		id, body string
		want     idem.Outcome
		wantErr  error
		sentBy   int // transactions sent when the delivery answered
	}{
		{"a duplicate: the read answers", "m-0", "p", idem.Duplicate, nil, 0},
		{"a key reuse: the read answers", "m-1", "other", "", idem.ErrKeyReuse, 0},
		{"a first delivery: the transaction answers", "new", "p", idem.Processed, nil, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			slow.mu.Lock()
			slow.hold, slow.sent, slow.calledOff = 500*time.Millisecond, 0, 0
			slow.mu.Unlock()
			res, err := store.Process(ctx, idem.Message{ID: tc.id, Source: "storm", Payload: []byte(tc.body)}, e.creditHandler(nil))
			sent, calledOff := counts()
			if res.Outcome != tc.want || !errors.Is(err, tc.wantErr) || sent != tc.sentBy || calledOff != 0 {
				t.Errorf("want %q %v with %d transaction(s) sent and none called off, got %q %v, %d and %d",
					tc.want, tc.wantErr, tc.sentBy, res.Outcome, err, sent, calledOff)
			}
			for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
				if sent, _ := counts(); sent == 1 {
					break
				}
			}
			if sent, calledOff := counts(); sent != 1 || calledOff != 0 {
				t.Errorf("the transaction: want it sent once, to its end, got %d sent and %d called off", sent, calledOff)
			}
		})
	}
	if got := e.balance(t, "acc-9"); got != 13*500 {
		t.Errorf("balance: want %d, got %d", 13*500, got)
	}
}

// lateAnswers sends each transaction at once and holds its answer back,
// and sends each read a moment later: the read then finds the claim the
// transaction just made, before the transaction's answer is back.
type lateAnswers struct{ answer, read time.Duration }

func (l lateAnswers) RoundTrip(req *http.Request) (*http.Response, error) {
	switch target := req.Header.Get("X-Amz-Target"); {
	case strings.HasSuffix(target, ".TransactWriteItems"):
		resp, err := http.DefaultTransport.RoundTrip(req)
		if err != nil {
			return resp, err
		}
		select {
		case <-time.After(l.answer):
			return resp, nil
		case <-req.Context().Done():
			resp.Body.Close()
			return nil, req.Context().Err()
		}
	case strings.HasSuffix(target, ".GetItem"):
		time.Sleep(l.read)
	}
	return http.DefaultTransport.RoundTrip(req)
}

// TestReadFindsItsOwnClaim: a read sent beside a first delivery's
// transaction that reaches DynamoDB after the commit finds the claim the
// transaction made; the delivery is still Processed, not a Duplicate of
// itself, and its effect applied once.
func TestReadFindsItsOwnClaim(t *testing.T) {
	e := newEnv(t)
	late := &lateAnswers{}
	store, err := idem.New(idemtest.Client(idemtest.Endpoint(t), func(o *dynamodb.Options) { o.HTTPClient = &http.Client{Transport: late} }),
		e.processed, func(o *idem.Options) { o.WritesInOneRegion = true })
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for i := range 12 { // a storm: the sender's deliveries read their claims
		for range 3 {
			if _, err := store.Process(ctx, idem.Message{ID: fmt.Sprint("m-", i), Source: "storm", Payload: []byte("p")}, e.creditHandler(nil)); err != nil {
				t.Fatal(err)
			}
		}
	}
	late.answer, late.read = time.Second, 200*time.Millisecond
	res, err := store.Process(ctx, idem.Message{ID: "new", Source: "storm", Payload: []byte("p")}, e.creditHandler(nil))
	if err != nil || res.Outcome != idem.Processed {
		t.Fatalf("want Processed, got %s %v", res.Outcome, err)
	}
	if got := e.balance(t, "acc-9"); got != 13*500 {
		t.Errorf("balance: want %d, got %d", 13*500, got)
	}
}

// TestCountedRedeliveriesWaitForTheRead: a redelivery the sender counts
// (Message.Attempt 2 or more), in a storm of them, waits for its read: a
// duplicate is answered by the read alone, no transaction started, however
// quick the handler; a first attempt goes straight to its transaction.
func TestCountedRedeliveriesWaitForTheRead(t *testing.T) {
	e := newEnv(t)
	slow := &slowTransactions{}
	store, err := idem.New(idemtest.Client(idemtest.Endpoint(t), e.calls.Option, func(o *dynamodb.Options) { o.HTTPClient = &http.Client{Transport: slow} }),
		e.processed, func(o *idem.Options) { o.WritesInOneRegion = true })
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	deliver := func(id string, attempt int) (idem.Outcome, int, int) {
		t.Helper()
		e.calls.Reset()
		res, err := store.Process(ctx, idem.Message{ID: id, Source: "queue", Payload: []byte("p"), Attempt: attempt}, e.creditHandler(nil))
		if err != nil {
			t.Fatal(err)
		}
		return res.Outcome, e.calls.Count("GetItem"), e.calls.Count("TransactWriteItems")
	}
	for i := range 12 { // a redelivery storm: each message received 3 times
		for attempt := 1; attempt <= 3; attempt++ {
			deliver(fmt.Sprint("m-", i), attempt)
		}
	}
	slow.mu.Lock()
	slow.hold = 2 * time.Second // a transaction started would show in its time and its count
	slow.mu.Unlock()
	for _, tc := range []struct {
		name      string
		id        string
		attempt   int
		want      idem.Outcome
		gets, txs int
	}{
		{"a redelivery: the read alone", "m-0", 2, idem.Duplicate, 1, 0},
		{"a third receive: the read alone", "m-1", 3, idem.Duplicate, 1, 0},
		{"a redelivery of a message never committed: the read, then the transaction", "late", 2, idem.Processed, 1, 1},
		{"a first attempt: the transaction alone", "new", 1, idem.Processed, 0, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, gets, txs := deliver(tc.id, tc.attempt)
			if got != tc.want || gets != tc.gets || txs != tc.txs {
				t.Errorf("want %v with %d GetItem and %d transactions, got %v with %d and %d", tc.want, tc.gets, tc.txs, got, gets, txs)
			}
		})
	}
}

// TestClaimForgottenUnderAReadsAnswer: a duplicate answered by its read
// while its transaction is held back, and its claim deleted by hand
// before the transaction arrives (idem forget, to have the message
// processed again): the transaction commits, the effect applied once
// under the new claim, and, the delivery having answered already, a WARN
// line says so.
func TestClaimForgottenUnderAReadsAnswer(t *testing.T) {
	e := newEnv(t)
	slow := &slowTransactions{}
	var logs syncBuffer
	store, err := idem.New(idemtest.Client(idemtest.Endpoint(t), func(o *dynamodb.Options) { o.HTTPClient = &http.Client{Transport: slow} }),
		e.processed, func(o *idem.Options) {
			o.WritesInOneRegion = true
			o.Logger = slog.New(slog.NewJSONHandler(&logs, nil))
		})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for i := range 12 {
		for range 3 {
			if _, err := store.Process(ctx, idem.Message{ID: fmt.Sprint("m-", i), Source: "storm", Payload: []byte("p")}, e.creditHandler(nil)); err != nil {
				t.Fatal(err)
			}
		}
	}
	slow.mu.Lock()
	slow.hold = time.Second
	slow.mu.Unlock()
	res, err := store.Process(ctx, idem.Message{ID: "m-0", Source: "storm", Payload: []byte("p")}, e.creditHandler(nil))
	if err != nil || res.Outcome != idem.Duplicate {
		t.Fatalf("want the read's Duplicate, got %s %v", res.Outcome, err)
	}
	if _, err := e.client.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: &e.processed,
		Key: map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: "storm#m-0"}}}); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline) && !strings.Contains(logs.String(), "committed after all"); {
		time.Sleep(10 * time.Millisecond)
	}
	if !strings.Contains(logs.String(), `"key":"storm#m-0"`) || !strings.Contains(logs.String(), "committed after all") {
		t.Errorf("want a WARN line naming the key, got %s", logs.String())
	}
	if got := e.balance(t, "acc-9"); got != 13*500 {
		t.Errorf("balance: want %d (12 credits, and the forgotten message's again), got %d", 13*500, got)
	}
}

// syncBuffer is a bytes.Buffer for a logger written from other goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
