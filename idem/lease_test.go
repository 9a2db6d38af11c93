package idem_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemkit/kit/idem"
)

// remote stands in for a service that deduplicates an Idempotency-Key, as
// a payment API does: the same key gets the same receipt back. It records
// how many calls were in flight per key at once.
type remote struct {
	mu        sync.Mutex
	receipts  map[string]string
	calls     int
	inFlight  map[string]int
	maxFlight int
	delay     time.Duration
}

func newRemote(delay time.Duration) *remote {
	return &remote{receipts: map[string]string{}, inFlight: map[string]int{}, delay: delay}
}

func (r *remote) call(ctx context.Context, key string) (string, error) {
	r.mu.Lock()
	r.calls++
	r.inFlight[key]++
	r.maxFlight = max(r.maxFlight, r.inFlight[key])
	r.mu.Unlock()
	defer func() { r.mu.Lock(); r.inFlight[key]--; r.mu.Unlock() }()
	select {
	case <-time.After(r.delay):
	case <-ctx.Done():
		return "", ctx.Err()
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.receipts[key]; !ok {
		r.receipts[key] = fmt.Sprintf("rcpt_%d", len(r.receipts)+1)
	}
	return r.receipts[key], nil
}

// receiptHandler calls the remote with the lease's key and credits acc-9
// with 500 cents, answering with the receipt.
func (e *env) receiptHandler(r *remote, leases chan<- idem.Lease) idem.Handler {
	return func(ctx context.Context, m idem.Message) (idem.Effect, error) {
		l, ok := idem.LeaseFromContext(ctx)
		if !ok {
			return idem.Effect{}, errors.New("no lease in the context")
		}
		if leases != nil {
			leases <- l
		}
		receipt, err := r.call(ctx, l.Key)
		if err != nil {
			return idem.Effect{}, err
		}
		return idem.Effect{Writes: []types.TransactWriteItem{e.credit("acc-9", 500)}, Response: []byte(receipt)}, nil
	}
}

// clock is a settable clock, for leases that end without waiting.
type clock struct {
	mu  sync.Mutex
	off time.Duration
}

func (c *clock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return time.Now().Add(c.off) }
func (c *clock) skip(d time.Duration) {
	c.mu.Lock()
	c.off += d
	c.mu.Unlock()
}

func TestLeaseFirstDeliveryAndDuplicates(t *testing.T) {
	e := newEnv(t)
	r := newRemote(0)
	leases := make(chan idem.Lease, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := e.store.ProcessLeased(ctx, msg, e.receiptHandler(r, leases))
	if err != nil || res.Outcome != idem.Processed {
		t.Fatalf("want Processed, got %v, %v", res.Outcome, err)
	}
	l := <-leases
	deadline, _ := ctx.Deadline()
	if l.Key != "credits#evt_001" || l.Token != 1 || l.Until.After(deadline) || l.StepKey("receipt") != "credits#evt_001/receipt" {
		t.Errorf("lease %+v: want key credits#evt_001, token 1, until at most the deadline %v", l, deadline)
	}
	if u, tw := e.calls.Count("UpdateItem"), e.calls.Count("TransactWriteItems"); u != 1 || tw != 1 {
		t.Errorf("first delivery: want 1 UpdateItem and 1 TransactWriteItems, got %d and %d", u, tw)
	}
	for i := range 3 {
		e.calls.Reset()
		res, err := e.store.ProcessLeased(ctx, msg, e.receiptHandler(r, leases))
		if err != nil || res.Outcome != idem.Duplicate || string(res.Record.Response) != "rcpt_1" {
			t.Fatalf("redelivery %d: want Duplicate replaying rcpt_1, got %v %q, %v", i, res.Outcome, res.Record.Response, err)
		}
		if n := e.calls.Count(""); n != 1 {
			t.Errorf("redelivery %d: want 1 call, got %d", i, n)
		}
	}
	if r.calls != 1 || e.balance(t, "acc-9") != 500 {
		t.Errorf("want 1 remote call and balance 500, got %d and %d", r.calls, e.balance(t, "acc-9"))
	}
}

// TestLeaseConcurrentEnvironments: one message delivered at once to eight
// environments (Stores), each retrying while the lease is held, as SQS
// would: one remote call, never two in flight, one effect.
func TestLeaseConcurrentEnvironments(t *testing.T) {
	e := newEnv(t)
	r := newRemote(50 * time.Millisecond)
	var held atomic.Int64
	var wg sync.WaitGroup
	for range 8 {
		store, err := idem.New(e.client, e.processed)
		if err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				res, err := store.ProcessLeased(context.Background(), msg, e.receiptHandler(r, nil))
				if errors.Is(err, idem.ErrLeaseHeld) {
					if !errors.Is(err, idem.ErrRetryable) || idem.OutcomeOf(res, err) != idem.InFlight {
						t.Errorf("a held lease: want a retryable InFlight, got %v", err)
					}
					held.Add(1)
					time.Sleep(10 * time.Millisecond)
					continue
				}
				if err != nil || (res.Outcome != idem.Processed && res.Outcome != idem.Duplicate) {
					t.Errorf("want Processed or Duplicate, got %v, %v", res.Outcome, err)
				}
				return
			}
		}()
	}
	wg.Wait()
	if r.calls != 1 || r.maxFlight != 1 || e.balance(t, "acc-9") != 500 {
		t.Errorf("want 1 call, 1 in flight at most, balance 500; got %d, %d, %d", r.calls, r.maxFlight, e.balance(t, "acc-9"))
	}
	if held.Load() == 0 {
		t.Error("no delivery met the lease: the test raced nothing")
	}
}

// TestLeaseReleasedOnHandlerFailure: an error or a panic releases the
// lease, so the redelivery runs at once, with a new token and the same key.
func TestLeaseReleasedOnHandlerFailure(t *testing.T) {
	for _, tc := range []struct {
		name string
		fail func() (idem.Effect, error)
		want any
	}{
		{"error", func() (idem.Effect, error) { return idem.Effect{}, errors.New("receipts: 503") }, new(*idem.HandlerError)},
		{"panic", func() (idem.Effect, error) { panic("boom") }, new(*idem.PanicError)},
		{"invalid effect", func() (idem.Effect, error) { return idem.Effect{Response: make([]byte, 70_000)}, nil }, new(*idem.InvalidError)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			r := newRemote(0)
			leases := make(chan idem.Lease, 2)
			_, err := e.store.ProcessLeased(context.Background(), msg, func(ctx context.Context, m idem.Message) (idem.Effect, error) {
				l, _ := idem.LeaseFromContext(ctx)
				leases <- l
				r.call(ctx, l.Key)
				return tc.fail()
			})
			if !errors.As(err, tc.want) {
				t.Fatalf("want %T, got %v", tc.want, err)
			}
			res, err := e.store.ProcessLeased(context.Background(), msg, e.receiptHandler(r, leases))
			if err != nil || res.Outcome != idem.Processed {
				t.Fatalf("the redelivery: want Processed at once, got %v, %v", res.Outcome, err)
			}
			first, second := <-leases, <-leases
			if first.Key != second.Key || second.Token <= first.Token {
				t.Errorf("leases %+v then %+v: want the same key and a larger token", first, second)
			}
			if len(r.receipts) != 1 || e.balance(t, "acc-9") != 500 {
				t.Errorf("want 1 receipt and balance 500, got %d and %d", len(r.receipts), e.balance(t, "acc-9"))
			}
		})
	}
}

// crashing passes calls to DynamoDB except the commit and the release,
// which it drops, as an environment killed after its remote call would.
type crashing struct{ *dynamodb.Client }

func (c crashing) TransactWriteItems(context.Context, *dynamodb.TransactWriteItemsInput, ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error) {
	return nil, errors.New("killed")
}

func (c crashing) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	if strings.Contains(*in.UpdateExpression, ":zero") {
		return nil, errors.New("killed")
	}
	return c.Client.UpdateItem(ctx, in, optFns...)
}

// TestLeaseCrashAfterTheCall: killed after the remote answered and before
// the commit, the delivery leaves a pending claim; the redelivery meets
// the live lease, then, once it has ended, takes it over and calls again
// with the same key: one receipt, one effect.
func TestLeaseCrashAfterTheCall(t *testing.T) {
	e := newEnv(t)
	r := newRemote(0)
	clk := &clock{}
	lease := func(o *idem.LeaseOptions) { o.Duration = 10 * time.Second }
	crashed, _ := idem.New(crashing{e.client}, e.processed, func(o *idem.Options) { o.Now = clk.now })
	if _, err := crashed.ProcessLeased(context.Background(), msg, e.receiptHandler(r, nil), lease); err == nil {
		t.Fatal("the crashed delivery succeeded")
	}
	store, _ := idem.New(e.client, e.processed, func(o *idem.Options) { o.Now = clk.now })
	_, err := store.ProcessLeased(context.Background(), msg, e.receiptHandler(r, nil), lease)
	var held *idem.LeaseHeldError
	if !errors.As(err, &held) || time.Until(held.Until) < 5*time.Second {
		t.Fatalf("within the lease: want a *LeaseHeldError until about 10 s on, got %v", err)
	}
	clk.skip(12 * time.Second) // the lease, and the second a takeover waits for clock skew
	res, err := store.ProcessLeased(context.Background(), msg, e.receiptHandler(r, nil), lease)
	if err != nil || res.Outcome != idem.Processed || string(res.Record.Response) != "rcpt_1" {
		t.Fatalf("after the lease: want Processed with rcpt_1, got %v %q, %v", res.Outcome, res.Record.Response, err)
	}
	if r.calls != 2 || len(r.receipts) != 1 || e.balance(t, "acc-9") != 500 {
		t.Errorf("want 2 calls with one key, 1 receipt, balance 500; got %d, %d, %d", r.calls, len(r.receipts), e.balance(t, "acc-9"))
	}
}

// TestLeaseLateCommitIsFenced: a delivery frozen past its lease while a
// redelivery takes over and commits; its late commit applies nothing.
func TestLeaseLateCommitIsFenced(t *testing.T) {
	e := newEnv(t)
	r := newRemote(0)
	clk := &clock{}
	var logs strings.Builder
	frozen, _ := idem.New(e.client, e.processed, func(o *idem.Options) { o.Logger = textLogger(&logs) })
	store, _ := idem.New(e.client, e.processed, func(o *idem.Options) { o.Now = clk.now })
	lease := func(o *idem.LeaseOptions) { o.Duration = 2 * time.Second }
	called, thaw := make(chan struct{}), make(chan struct{})
	done := make(chan error)
	go func() {
		_, err := frozen.ProcessLeased(context.Background(), msg, func(ctx context.Context, m idem.Message) (idem.Effect, error) {
			l, _ := idem.LeaseFromContext(ctx)
			receipt, _ := r.call(ctx, l.Key)
			close(called)
			<-thaw // frozen: the lease ends meanwhile
			return idem.Effect{Writes: []types.TransactWriteItem{e.credit("acc-9", 500)}, Response: []byte(receipt)}, nil
		}, lease)
		done <- err
	}()
	<-called
	clk.skip(4 * time.Second)
	res, err := store.ProcessLeased(context.Background(), msg, e.receiptHandler(r, nil), lease)
	if err != nil || res.Outcome != idem.Processed {
		t.Fatalf("the takeover: want Processed, got %v, %v", res.Outcome, err)
	}
	close(thaw)
	err = <-done
	var fe *idem.FencedError
	if !errors.As(err, &fe) || fe.Token != 1 || fe.Stored.Token != 2 || idem.OutcomeOf(idem.Result{}, err) != idem.Fenced {
		t.Fatalf("the late commit: want a Fenced *FencedError of token 1 against 2, got %v", err)
	}
	if e.balance(t, "acc-9") != 500 || len(r.receipts) != 1 {
		t.Errorf("want balance 500 and 1 receipt, got %d and %d", e.balance(t, "acc-9"), len(r.receipts))
	}
	if !strings.Contains(logs.String(), "level=WARN msg=\"idem: Fenced\"") || !strings.Contains(logs.String(), "storedToken=2") {
		t.Errorf("want a WARN Fenced line naming the tokens, got %s", logs.String())
	}
}

// TestLeaseBeyondKeyLifetime: a pending claim older than the key's
// lifetime gets no new lease, and no call.
func TestLeaseBeyondKeyLifetime(t *testing.T) {
	e := newEnv(t)
	r := newRemote(0)
	clk := &clock{}
	crashed, _ := idem.New(crashing{e.client}, e.processed, func(o *idem.Options) { o.Now = clk.now })
	crashed.ProcessLeased(context.Background(), msg, e.receiptHandler(r, nil))
	clk.skip(25 * time.Hour)
	store, _ := idem.New(e.client, e.processed, func(o *idem.Options) { o.Now = clk.now })
	_, err := store.ProcessLeased(context.Background(), msg, e.receiptHandler(r, nil))
	var se *idem.StaleLeaseError
	if !errors.As(err, &se) || errors.Is(err, idem.ErrRetryable) || !strings.Contains(err.Error(), "key lifetime (24h0m0s)") {
		t.Fatalf("want a *StaleLeaseError, not retryable, naming the lifetime; got %v", err)
	}
	if r.calls != 1 {
		t.Errorf("want the one call of the crashed delivery, got %d", r.calls)
	}
}

// TestOneTransactionModeMeetsALease: Process meets a live pending claim as
// a held lease, and takes over one whose lease ended.
func TestOneTransactionModeMeetsALease(t *testing.T) {
	e := newEnv(t)
	clk := &clock{}
	crashed, _ := idem.New(crashing{e.client}, e.processed, func(o *idem.Options) { o.Now = clk.now })
	crashed.ProcessLeased(context.Background(), msg, e.receiptHandler(newRemote(0), nil))
	store, _ := idem.New(e.client, e.processed, func(o *idem.Options) { o.Now = clk.now; o.CacheSize = 10 })
	if _, err := store.Process(context.Background(), msg, e.creditHandler(nil)); !errors.Is(err, idem.ErrLeaseHeld) {
		t.Fatalf("within the lease: want ErrLeaseHeld, got %v", err)
	}
	clk.skip(2 * time.Minute)
	if res, err := store.Process(context.Background(), msg, e.creditHandler(nil)); err != nil || res.Outcome != idem.Processed {
		t.Fatalf("after the lease: want Processed, got %v, %v", res.Outcome, err)
	}
	if e.balance(t, "acc-9") != 500 {
		t.Errorf("balance: want 500, got %d", e.balance(t, "acc-9"))
	}
}

// leaseRefused is why a handler wrapped under lease options o on store
// is refused when it is built, or nil.
func leaseRefused(store *idem.Store, o idem.LeaseOptions) error {
	_, err := idem.Wrap(store, func(string) (string, error) { return "k", nil },
		func(context.Context, string) (string, idem.Effect, error) { return "", idem.Effect{}, nil },
		func(w *idem.WrapOptions[string]) { w.Lease = &o })
	return err
}

func TestLeaseOptionsChecked(t *testing.T) {
	e := newEnv(t)
	for _, tc := range []struct {
		name string
		o    idem.LeaseOptions
		want string
	}{
		{"too short", idem.LeaseOptions{Duration: time.Millisecond}, "shorter than a second"},
		{"negative", idem.LeaseOptions{KeyLifetime: -time.Hour}, "must not be negative"},
		{"lifetime within the lease", idem.LeaseOptions{Duration: time.Hour, KeyLifetime: time.Hour}, "must exceed Duration"},
		{"lifetime beyond the retention", idem.LeaseOptions{KeyLifetime: 30 * 24 * time.Hour}, "RetentionDays (30) must exceed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := leaseRefused(e.store, tc.o); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("want an error saying %q, got %v", tc.want, err)
			}
			e.calls.Reset()
			_, err := e.store.ProcessLeased(context.Background(), msg, e.creditHandler(nil), func(o *idem.LeaseOptions) { *o = tc.o })
			if !errors.Is(err, idem.ErrInvalid) || e.calls.Count("") != 0 {
				t.Errorf("ProcessLeased: want an invalid error and no call, got %v and %d calls", err, e.calls.Count(""))
			}
		})
	}
	noUpdate, _ := idem.New(&scripted{}, "processed")
	if err := leaseRefused(noUpdate, idem.LeaseOptions{}); err == nil || !strings.Contains(err.Error(), "no UpdateItem") {
		t.Errorf("a client without UpdateItem: want it named, got %v", err)
	}
}

// TestLeaseRejectionRecorded: in lease mode too, Effect.Rejected records a
// failed condition as the outcome, under the fence.
func TestLeaseRejectionRecorded(t *testing.T) {
	e := newEnv(t)
	h := func(ctx context.Context, m idem.Message) (idem.Effect, error) {
		w, err := idem.ConditionCheck(e.accounts, map[string]string{"account": "nobody"}, conditionExists("account"))
		return idem.Effect{Writes: []types.TransactWriteItem{w}, Rejected: func(*idem.RejectedError) ([]byte, error) { return []byte("no such account"), nil }}, err
	}
	for i, want := range []idem.Outcome{idem.Rejected, idem.Duplicate} {
		res, err := e.store.ProcessLeased(context.Background(), msg, h)
		if err != nil || res.Outcome != want || string(res.Record.Response) != "no such account" {
			t.Errorf("delivery %d: want %s with the rejection, got %v %q, %v", i, want, res.Outcome, res.Record.Response, err)
		}
	}
}

func conditionExists(name string) expression.ConditionBuilder {
	return expression.AttributeExists(expression.Name(name))
}

func textLogger(w io.Writer) *slog.Logger {
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// losing sends each UpdateItem and, the first lost times, loses its answer.
type losing struct {
	*dynamodb.Client
	lost int
}

func (c *losing) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	out, err := c.Client.UpdateItem(ctx, in, optFns...)
	if err == nil && c.lost > 0 && strings.Contains(*in.UpdateExpression, "ADD") {
		c.lost--
		return nil, io.ErrUnexpectedEOF
	}
	return out, err
}

// TestLeaseAnswerLost: a lease taken with its answer lost is released, so
// the redelivery runs at once rather than wait it out.
func TestLeaseAnswerLost(t *testing.T) {
	e := newEnv(t)
	r := newRemote(0)
	store, _ := idem.New(&losing{Client: e.client, lost: 1}, e.processed)
	_, err := store.ProcessLeased(context.Background(), msg, e.receiptHandler(r, nil))
	if !errors.Is(err, idem.ErrRetryable) || r.calls != 0 {
		t.Fatalf("the lost answer: want a retryable error and no call, got %v and %d calls", err, r.calls)
	}
	res, err := store.ProcessLeased(context.Background(), msg, e.receiptHandler(r, nil))
	if err != nil || res.Outcome != idem.Processed || e.balance(t, "acc-9") != 500 {
		t.Fatalf("the redelivery: want Processed at once, got %v, %v", res.Outcome, err)
	}
}

// resending sends each lease UpdateItem twice, as the SDK resends one
// whose answer was lost, and returns the second answer.
type resending struct{ *dynamodb.Client }

func (c resending) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	if strings.Contains(*in.UpdateExpression, "ADD") {
		c.Client.UpdateItem(ctx, in, optFns...)
	}
	return c.Client.UpdateItem(ctx, in, optFns...)
}

// TestLeaseResentClaimIsOurs: a lease whose first send applied and whose
// resend met it is this delivery's own, not another's, for the claim and
// for a takeover.
func TestLeaseResentClaimIsOurs(t *testing.T) {
	e := newEnv(t)
	r := newRemote(0)
	clk := &clock{}
	crashed, _ := idem.New(crashing{e.client}, e.processed, func(o *idem.Options) { o.Now = clk.now })
	store, _ := idem.New(resending{e.client}, e.processed, func(o *idem.Options) { o.Now = clk.now })
	other := msg
	other.ID = "evt_002"
	crashed.ProcessLeased(context.Background(), other, e.receiptHandler(r, nil))
	clk.skip(2 * time.Minute)
	for _, m := range []idem.Message{msg, other} { // a new claim; a takeover
		res, err := store.ProcessLeased(context.Background(), m, e.receiptHandler(r, nil))
		if err != nil || res.Outcome != idem.Processed {
			t.Errorf("%s: want Processed, got %v, %v", m.ID, res.Outcome, err)
		}
	}
	if e.balance(t, "acc-9") != 1000 {
		t.Errorf("balance: want 1000, got %d", e.balance(t, "acc-9"))
	}
}

// TestLeaseStaleStaysStale: a pending claim whose key lifetime would end
// within the new lease gets no new lease. Once the claim has expired
// (retention, 30 days, has passed), it is absent, as in every mode: the
// message is a new one, by the contract that retention outlasts every
// sender's redelivery.
func TestLeaseStaleStaysStale(t *testing.T) {
	for _, tc := range []struct {
		skip  time.Duration
		stale bool
	}{{24*time.Hour - 30*time.Second, true}, {31 * 24 * time.Hour, false}} {
		t.Run(tc.skip.String(), func(t *testing.T) {
			e := newEnv(t)
			r := newRemote(0)
			clk := &clock{}
			crashed, _ := idem.New(crashing{e.client}, e.processed, func(o *idem.Options) { o.Now = clk.now })
			crashed.ProcessLeased(context.Background(), msg, e.receiptHandler(r, nil))
			clk.skip(tc.skip)
			store, _ := idem.New(e.client, e.processed, func(o *idem.Options) { o.Now = clk.now })
			res, err := store.ProcessLeased(context.Background(), msg, e.receiptHandler(r, nil))
			if tc.stale && (!errors.As(err, new(*idem.StaleLeaseError)) || r.calls != 1) {
				t.Errorf("want a *StaleLeaseError and no new call, got %v and %d calls", err, r.calls)
			}
			if !tc.stale && (err != nil || res.Outcome != idem.Processed || r.calls != 2) {
				t.Errorf("expired: want Processed with a new call, got %v, %v and %d calls", res.Outcome, err, r.calls)
			}
		})
	}
}

// TestBatchTakesOverAnEndedLease: ProcessBatch, too, commits over a
// pending claim whose lease ended, and meets a live one as held.
func TestBatchTakesOverAnEndedLease(t *testing.T) {
	e := newEnv(t)
	clk := &clock{}
	crashed, _ := idem.New(crashing{e.client}, e.processed, func(o *idem.Options) { o.Now = clk.now })
	crashed.ProcessLeased(context.Background(), msg, e.receiptHandler(newRemote(0), nil))
	store, _ := idem.New(e.client, e.processed, func(o *idem.Options) { o.Now = clk.now })
	other := msg
	other.ID = "evt_002"
	batch := []idem.Message{msg, other}
	h := func(_ context.Context, _ int, m idem.Message) (idem.Effect, error) {
		return idem.Effect{Writes: []types.TransactWriteItem{e.credit("acc-"+m.ID, 1)}}, nil
	}
	out := store.ProcessBatch(context.Background(), batch, h)
	if !errors.Is(out[0].Err, idem.ErrLeaseHeld) || out[1].Err != nil {
		t.Fatalf("within the lease: want [held, Processed], got %v, %v", out[0].Err, out[1].Err)
	}
	clk.skip(2 * time.Minute)
	out = store.ProcessBatch(context.Background(), batch, h)
	if out[0].Err != nil || out[0].Result.Outcome != idem.Processed || out[1].Result.Outcome != idem.Duplicate {
		t.Fatalf("after the lease: want [Processed, Duplicate], got %+v", out)
	}
}

// vanishing deletes the claim before the second transaction it sends: a
// pending claim deleted by hand between Process's claim and its takeover.
type vanishing struct {
	*dynamodb.Client
	table string
	n     int
}

func (c *vanishing) TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, optFns ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error) {
	if c.n++; c.n == 2 {
		c.Client.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: &c.table, Key: map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: "credits#evt_001"}}})
	}
	return c.Client.TransactWriteItems(ctx, in, optFns...)
}

// TestTakeoverOfAVanishedClaim: the pending claim gone before its
// takeover is a retryable failure, not a key reuse; the retry claims it.
func TestTakeoverOfAVanishedClaim(t *testing.T) {
	e := newEnv(t)
	clk := &clock{}
	crashed, _ := idem.New(crashing{e.client}, e.processed, func(o *idem.Options) { o.Now = clk.now })
	crashed.ProcessLeased(context.Background(), msg, e.receiptHandler(newRemote(0), nil))
	clk.skip(2 * time.Minute)
	store, _ := idem.New(&vanishing{Client: e.client, table: e.processed}, e.processed, func(o *idem.Options) { o.Now = clk.now })
	if _, err := store.Process(context.Background(), msg, e.creditHandler(nil)); !errors.Is(err, idem.ErrRetryable) || errors.Is(err, idem.ErrKeyReuse) {
		t.Fatalf("want a retryable error, got %v", err)
	}
	if res, err := store.Process(context.Background(), msg, e.creditHandler(nil)); err != nil || res.Outcome != idem.Processed || e.balance(t, "acc-9") != 500 {
		t.Fatalf("the retry: want Processed and 500, got %v, %v", res.Outcome, err)
	}
}
