package idem_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
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
// the first max of them (0: all); it sends a throttled call 3 times at
// most, which bounds no contention.
func contended(t *testing.T, kind idemtest.FaultKind, max int) (*env, *idem.Store, *idemtest.Faults, *idemtest.Outcomes) {
	t.Helper()
	e := newEnv(t)
	faults := &idemtest.Faults{Rates: map[idemtest.FaultKind]float64{kind: 1}, Operations: []string{"UpdateItem"}, Max: max}
	var seen idemtest.Outcomes
	store, err := idem.New(idemtest.Client(idemtest.Endpoint(t), faults.Option), e.processed, seen.Option,
		func(o *idem.Options) {
			o.MaxAttempts, o.BackoffBase, o.BackoffMax = 3, time.Millisecond, 5*time.Millisecond
		})
	if err != nil {
		t.Fatal(err)
	}
	return e, store, faults, &seen
}

// TestLeaseContentionIsRetried: a lease's UpdateItem that meets contention
// is sent again after a backoff for as long as the delivery has time,
// whatever Options.MaxAttempts says, and once its time is out fails
// retryable and InFlight: never a *StoreError that says nothing was
// applied, since the write it met may be this message's own commit.
func TestLeaseContentionIsRetried(t *testing.T) {
	for _, kind := range []idemtest.FaultKind{idemtest.FaultTransactionConflict, idemtest.FaultReplicatedConflict} {
		t.Run(string(kind)+"/outlasting the delivery's time", func(t *testing.T) {
			e, store, faults, seen := contended(t, kind, 0)
			ran := false
			// Time for a lease (a second, and its second of Reserve) and a
			// little more: contention is retried until the deadline's
			// reserve, then given up.
			ctx, cancel := context.WithTimeout(context.Background(), 2100*time.Millisecond)
			defer cancel()
			_, err := store.ProcessLeased(ctx, msg, func(context.Context, idem.Message) (idem.Effect, error) {
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
			if got := faults.Counts()[kind]; got < 1 {
				t.Errorf("want the lease sent, got %d sends", got)
			} else {
				t.Logf("the lease sent %d times before the deadline's reserve", got)
			}
			if ran || e.claimCount(t) != 0 {
				t.Errorf("want no handler run and no claim, got ran=%v and %d claim(s)", ran, e.claimCount(t))
			}
			if seen.Count(idem.InFlight) != 1 || seen.Count(idem.Failed) != 0 {
				t.Errorf("want the delivery counted InFlight, got %v", seen.All())
			}
		})
		t.Run(string(kind)+"/then through, past MaxAttempts", func(t *testing.T) {
			e, store, faults, seen := contended(t, kind, 6)
			res, err := store.ProcessLeased(context.Background(), msg, e.creditHandler(nil))
			if err != nil || res.Outcome != idem.Processed {
				t.Fatalf("want Processed once the conflict passed, got %v, %v", res.Outcome, err)
			}
			if faults.Counts()[kind] != 6 || e.balance(t, "acc-9") != 500 || seen.Count(idem.Processed) != 1 {
				t.Errorf("want 6 conflicts met, one credit and Processed, got %v, %d, %v", faults.Counts(), e.balance(t, "acc-9"), seen.All())
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

// conflicting answers a TransactWriteItems as DynamoDB does while another
// transaction writes one of its items (reasons, one per action, as the
// cancellation names them), the first n of them (negative: all); every
// other request goes to the server.
type conflicting struct {
	reasons []string
	n       int
	met     int
}

func (c *conflicting) RoundTrip(req *http.Request) (*http.Response, error) {
	if !strings.HasSuffix(req.Header.Get("X-Amz-Target"), ".TransactWriteItems") || c.n >= 0 && c.met >= c.n {
		return http.DefaultTransport.RoundTrip(req)
	}
	c.met++
	var rs []string
	for _, r := range c.reasons {
		rs = append(rs, fmt.Sprintf(`{"Code":%q}`, r))
	}
	body := `{"__type":"com.amazonaws.dynamodb.v20120810#TransactionCanceledException","Message":"Transaction cancelled","CancellationReasons":[` + strings.Join(rs, ",") + `]}`
	return &http.Response{StatusCode: 400, Header: http.Header{"Content-Type": {"application/x-amz-json-1.0"}},
		Body: io.NopCloser(strings.NewReader(body)), Request: req}, nil
}

// TestEffectContentionWithinTheDeadline: a transaction cancelled because
// another transaction writes its effect's item (a hot account) is sent
// again for as long as the delivery has time, past Options.MaxAttempts;
// a delivery whose time runs out first is a *ContendedError, counted
// Contended, not Failed, with nothing applied. Contention on the claim
// (another delivery of the message) is counted InFlight.
func TestEffectContentionWithinTheDeadline(t *testing.T) {
	for _, tc := range []struct {
		name     string
		reasons  []string
		n        int
		deadline time.Duration
		want     idem.Outcome
		balance  int
	}{
		{"past MaxAttempts, then through", []string{"None", "TransactionConflict"}, 8, 0, idem.Processed, 500},
		{"until the deadline: contended", []string{"None", "TransactionConflict"}, -1, 600 * time.Millisecond, idem.Contended, 0},
		{"the claim, until the deadline: in flight", []string{"TransactionConflict", "None"}, -1, 600 * time.Millisecond, idem.InFlight, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			hot := &conflicting{reasons: tc.reasons, n: tc.n}
			var seen idemtest.Outcomes
			store, err := idem.New(idemtest.Client(idemtest.Endpoint(t), func(o *dynamodb.Options) { o.HTTPClient = &http.Client{Transport: hot} }),
				e.processed, seen.Option, func(o *idem.Options) {
					o.WritesInOneRegion, o.MaxAttempts, o.BackoffBase, o.BackoffMax = true, 3, time.Millisecond, 20*time.Millisecond
				})
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			if tc.deadline > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, tc.deadline)
				defer cancel()
			}
			res, err := store.Process(ctx, msg, e.creditHandler(nil))
			var ce *idem.ContendedError
			switch tc.want {
			case idem.Processed:
				if err != nil || res.Outcome != idem.Processed || hot.met != tc.n {
					t.Errorf("want Processed after %d conflicts, got %v %v after %d", tc.n, res.Outcome, err, hot.met)
				}
			default:
				if !errors.As(err, &ce) || !errors.Is(err, idem.ErrRetryable) || ce.Attempts < 1 || ce.Attempts != hot.met {
					t.Errorf("want a retryable *ContendedError counting its %d sends, got %T %v", hot.met, err, err)
				}
				if tc.want == idem.Contended && !errors.Is(err, idem.ErrContended) {
					t.Errorf("want errors.Is(err, ErrContended), got %v", err)
				}
			}
			if seen.Count(tc.want) != 1 || seen.Count(idem.Failed) != 0 {
				t.Errorf("want the delivery counted %s, got %v", tc.want, seen.All())
			}
			if got := e.balance(t, "acc-9"); got != tc.balance {
				t.Errorf("balance: want %d, got %d", tc.balance, got)
			}
		})
	}
}
