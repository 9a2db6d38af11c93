package idem_test

import (
	"context"
	"errors"
	"testing"

	"github.com/aws/smithy-go"

	"github.com/idemkit/kit/idem"
	"github.com/idemkit/kit/idem/idemtest"
)

// Contention on a single-item call: DynamoDB answers
// TransactionConflictException while a transaction writes the item (another
// environment committing the same message), ReplicatedWriteConflictException
// while another Region of a global table does. Both mean "try again", never
// "nothing happened here"; no local server answers them on demand, so the
// Faults injector does, in front of the real one.

// contended is a Store over a client whose UpdateItem calls fail with kind,
// the first max of them (0: all).
func contended(t *testing.T, kind idemtest.FaultKind, max int) (*env, *idem.Store, *idemtest.Faults, *idemtest.Outcomes) {
	t.Helper()
	e := newEnv(t)
	faults := &idemtest.Faults{Rates: map[idemtest.FaultKind]float64{kind: 1}, Operations: []string{"UpdateItem"}, Max: max}
	var seen idemtest.Outcomes
	store, err := idem.New(idemtest.Client(idemtest.Endpoint(t), faults.Option), e.processed, seen.Option,
		func(o *idem.Options) { o.MaxAttempts = 3 })
	if err != nil {
		t.Fatal(err)
	}
	return e, store, faults, &seen
}

// TestLeaseContentionIsRetried: a lease's UpdateItem that meets contention
// is sent again after a backoff and, past Options.MaxAttempts, fails
// retryable and InFlight: never a *StoreError that says nothing was
// applied, since the write it met may be this message's own commit.
func TestLeaseContentionIsRetried(t *testing.T) {
	for _, kind := range []idemtest.FaultKind{idemtest.FaultTransactionConflict, idemtest.FaultReplicatedConflict} {
		t.Run(string(kind)+"/outlasting the retries", func(t *testing.T) {
			e, store, faults, seen := contended(t, kind, 0)
			ran := false
			_, err := store.ProcessLeased(context.Background(), msg, func(context.Context, idem.Message) (idem.Effect, error) {
				ran = true
				return idem.Effect{}, nil
			})
			var se *idem.StoreError
			if !errors.Is(err, idem.ErrRetryable) || errors.As(err, &se) {
				t.Fatalf("want a retryable error, not a StoreError; got %T %v", err, err)
			}
			var ae smithy.APIError
			if !errors.As(err, &ae) || ae.ErrorCode() != map[idemtest.FaultKind]string{
				idemtest.FaultTransactionConflict: "TransactionConflictException", idemtest.FaultReplicatedConflict: "ReplicatedWriteConflictException"}[kind] {
				t.Errorf("want DynamoDB's code in the error, got %v", err)
			}
			if got := faults.Counts()[kind]; got != 3 {
				t.Errorf("want the lease sent 3 times (MaxAttempts), got %d", got)
			}
			if ran || e.claimCount(t) != 0 {
				t.Errorf("want no handler run and no claim, got ran=%v and %d claim(s)", ran, e.claimCount(t))
			}
			if seen.Count(idem.InFlight) != 1 || seen.Count(idem.Failed) != 0 {
				t.Errorf("want the delivery counted InFlight, got %v", seen.All())
			}
		})
		t.Run(string(kind)+"/then through", func(t *testing.T) {
			e, store, faults, seen := contended(t, kind, 2)
			res, err := store.ProcessLeased(context.Background(), msg, e.creditHandler(nil))
			if err != nil || res.Outcome != idem.Processed {
				t.Fatalf("want Processed once the conflict passed, got %v, %v", res.Outcome, err)
			}
			if faults.Counts()[kind] != 2 || e.balance(t, "acc-9") != 500 || seen.Count(idem.Processed) != 1 {
				t.Errorf("want 2 conflicts met, one credit and Processed, got %v, %d, %v", faults.Counts(), e.balance(t, "acc-9"), seen.All())
			}
		})
	}
}

// TestReleaseContentionIsRetried: a handler failure releases the lease even
// when the release's UpdateItem first meets a conflict, so the redelivery
// runs at once instead of waiting out the lease.
func TestReleaseContentionIsRetried(t *testing.T) {
	e := newEnv(t)
	faults := &idemtest.Faults{Operations: []string{"UpdateItem"}}
	store, err := idem.New(idemtest.Client(idemtest.Endpoint(t), faults.Option), e.processed)
	if err != nil {
		t.Fatal(err)
	}
	_, err = store.ProcessLeased(context.Background(), msg, func(context.Context, idem.Message) (idem.Effect, error) {
		// The lease is taken: the release's first two calls conflict.
		faults.Rates, faults.Max = map[idemtest.FaultKind]float64{idemtest.FaultTransactionConflict: 1}, 2
		return idem.Effect{}, errors.New("receipts: 503")
	})
	if !errors.As(err, new(*idem.HandlerError)) {
		t.Fatalf("want the handler's error, got %v", err)
	}
	if faults.Counts()[idemtest.FaultTransactionConflict] != 2 {
		t.Fatalf("want the release to meet 2 conflicts, got %v", faults.Counts())
	}
	res, err := store.ProcessLeased(context.Background(), msg, e.creditHandler(nil))
	if err != nil || res.Outcome != idem.Processed {
		t.Fatalf("want the redelivery Processed at once (the lease released), got %v, %v", res.Outcome, err)
	}
}

// TestReadFirstContentionGoesOn: a read-first GetItem that meets contention
// (the claim being written at that moment) is no answer: the transaction
// decides.
func TestReadFirstContentionGoesOn(t *testing.T) {
	e := newEnv(t)
	faults := &idemtest.Faults{Operations: []string{"GetItem"}, Rates: map[idemtest.FaultKind]float64{idemtest.FaultTransactionConflict: 1}}
	store, err := idem.New(idemtest.Client(idemtest.Endpoint(t), faults.Option), e.processed, func(o *idem.Options) { o.ReadFirstAbove = -0.5 })
	if err != nil {
		t.Fatal(err)
	}
	// ReadFirstAbove below 0 never reads: a second Store reads first always.
	always, err := idem.New(idemtest.Client(idemtest.Endpoint(t), faults.Option), e.processed, func(o *idem.Options) { o.ReadFirstAbove = 1e-9 })
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for i, s := range []*idem.Store{store, always, always, always} {
		res, err := s.Process(ctx, msg, e.creditHandler(nil))
		want := idem.Duplicate
		if i == 0 {
			want = idem.Processed
		}
		if err != nil || res.Outcome != want {
			t.Fatalf("delivery %d: want %v, got %v, %v", i+1, want, res.Outcome, err)
		}
	}
	if faults.Counts()[idemtest.FaultTransactionConflict] == 0 {
		t.Error("no read met a conflict: the test raced nothing")
	}
	if e.balance(t, "acc-9") != 500 {
		t.Errorf("want one credit, got %d", e.balance(t, "acc-9"))
	}
}
