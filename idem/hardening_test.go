package idem_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemkit/kit/idem"
	"github.com/idemkit/kit/idem/idemtest"
	"github.com/idemkit/kit/idem/sqsconsumer"
)

// TestAnswerLostAfterTheCommit: DynamoDB commits, and the answer is cut
// short on its way back (every send, the SDK's retries included). The
// delivery must be retryable, not "nothing committed", and its retry a
// Duplicate: one credit. A call that never left the client is a
// *StoreError.
func TestAnswerLostAfterTheCommit(t *testing.T) {
	e := newEnv(t)
	faults := &idemtest.Faults{Rates: map[idemtest.FaultKind]float64{idemtest.FaultTruncatedResponse: 1}, Operations: []string{"TransactWriteItems"}}
	oneRegion := func(o *idem.Options) { o.WritesInOneRegion = true } // only the transaction's requests
	cut, err := idem.New(idemtest.Client(idemtest.Endpoint(t), faults.Option), e.processed, oneRegion)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	msg := idem.Message{ID: "evt_cut", Source: "credits", Payload: []byte("p")}
	_, err = cut.Process(ctx, msg, e.creditHandler(nil))
	var re *idem.RetryableError
	if !errors.As(err, &re) {
		t.Fatalf("want a *RetryableError for a commit whose answer was cut short, got %T: %v", err, err)
	}
	if re.Attempts != faults.Requests() || re.Attempts < 1 {
		t.Errorf("Attempts: want the %d request(s) sent, got %d", faults.Requests(), re.Attempts)
	}
	if n := e.claimCount(t); n != 1 {
		t.Fatalf("the transaction should have committed: %d claim(s)", n)
	}
	res, err := e.store.Process(ctx, msg, e.creditHandler(nil))
	if err != nil || res.Outcome != idem.Duplicate {
		t.Fatalf("the redelivery: want Duplicate, got %v, %v", res.Outcome, err)
	}
	if got := e.balance(t, "acc-9"); got != 500 {
		t.Errorf("balance: want 500 (one credit), got %d", got)
	}
	t.Logf("cut short after %d send(s): %v", re.Attempts, re)

	unsent, err := idem.New(idemtest.Client(idemtest.Endpoint(t), func(o *dynamodb.Options) {
		o.Credentials = aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
			return aws.Credentials{}, errors.New("no credentials here")
		})
	}), e.processed, oneRegion)
	if err != nil {
		t.Fatal(err)
	}
	_, err = unsent.Process(ctx, idem.Message{ID: "evt_unsent", Source: "credits"}, e.creditHandler(nil))
	var se *idem.StoreError
	if !errors.As(err, &se) {
		t.Errorf("want a *StoreError for a request that never went out, got %T: %v", err, err)
	}
}

// TestEveryCallbackRecovers: a panic in Effect.Rejected or Message.Replay
// fails that delivery with a *PanicError naming the callback, commits
// nothing, and spares the other messages of a batch.
func TestEveryCallbackRecovers(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	rejecting := func(context.Context, idem.Message) (idem.Effect, error) {
		return idem.Effect{
			Writes:   []types.TransactWriteItem{e.debit("acc-empty", 100)},
			Rejected: func(*idem.RejectedError) ([]byte, error) { panic("rejected blew up") },
		}, nil
	}
	_, err := e.store.Process(ctx, idem.Message{ID: "r1", Source: "s"}, rejecting)
	var pe *idem.PanicError
	if !errors.As(err, &pe) || pe.Callback != "Effect.Rejected" || len(pe.Stack) == 0 {
		t.Fatalf("want a *PanicError from Effect.Rejected with its stack, got %T: %v", err, err)
	}
	if n := e.claimCount(t); n != 0 {
		t.Errorf("claims: want 0, got %d", n)
	}

	out := e.store.ProcessBatch(ctx, []idem.Message{{ID: "r2", Source: "s"}, {ID: "ok", Source: "s"}},
		func(ctx context.Context, i int, m idem.Message) (idem.Effect, error) {
			if i == 0 {
				return rejecting(ctx, m)
			}
			return idem.Effect{Writes: []types.TransactWriteItem{e.credit("acc-ok", 5)}}, nil
		})
	if !errors.As(out[0].Err, &pe) || pe.Callback != "Effect.Rejected" {
		t.Errorf("batch: want a *PanicError for the first, got %v", out[0].Err)
	}
	if out[1].Err != nil || out[1].Result.Outcome != idem.Processed {
		t.Errorf("batch: want the second Processed, got %v, %v", out[1].Result.Outcome, out[1].Err)
	}

	// Message.Replay runs on a Duplicate only.
	m := idem.Message{ID: "d", Source: "s", Replay: func(idem.Record) error { panic("replay blew up") }}
	if _, err := e.store.Process(ctx, m, e.creditHandler(nil)); err != nil {
		t.Fatalf("first delivery: %v", err)
	}
	_, err = e.store.Process(ctx, m, e.creditHandler(nil))
	if !errors.As(err, &pe) || pe.Callback != "Message.Replay" {
		t.Errorf("want a *PanicError from Message.Replay, got %T: %v", err, err)
	}
}

// TestReplayFailureCountsOnce: a Duplicate whose stored record Replay
// cannot read is one delivery, one log line and one metric: Failed.
func TestReplayFailureCountsOnce(t *testing.T) {
	e := newEnv(t)
	var logs, metrics bytes.Buffer
	store, err := idem.New(e.client, e.processed, func(o *idem.Options) {
		o.Logger = slog.New(slog.NewJSONHandler(&logs, nil))
		o.Observers = []idem.Observer{idemtest.EMF(t, &metrics)}
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	m := idem.Message{ID: "evt_r", Source: "webhook", Payload: []byte("p")}
	if _, err := store.Process(ctx, m, e.creditHandler(nil)); err != nil {
		t.Fatal(err)
	}
	logs.Reset()
	metrics.Reset()
	m.Replay = func(stored idem.Record) error {
		if string(stored.Response) != "credited evt_r" {
			t.Errorf("Replay saw %q", stored.Response)
		}
		return errors.New("not this adapter's format")
	}
	_, err = store.Process(ctx, m, e.creditHandler(nil))
	var rpe *idem.ReplayError
	if !errors.As(err, &rpe) {
		t.Fatalf("want a *ReplayError, got %T: %v", err, err)
	}
	lines := strings.Split(strings.TrimSpace(logs.String()), "\n")
	emf := strings.Split(strings.TrimSpace(metrics.String()), "\n")
	if len(lines) != 1 || !strings.Contains(lines[0], `"outcome":"Failed"`) {
		t.Errorf("want one log line, Failed; got %d:\n%s", len(lines), logs.String())
	}
	if len(emf) != 1 || !strings.Contains(emf[0], `"Failed":1`) {
		t.Errorf("want one metric line, Failed; got %d:\n%s", len(emf), metrics.String())
	}
}

// TestProviderFingerprint: with Message.Fingerprint set to a provider's
// stable identity, a redelivery whose bytes changed is a Duplicate (its
// change logged with both digests), another identity under the key is a
// reuse, and a claim stored before fingerprints existed still matches its
// own bytes.
func TestProviderFingerprint(t *testing.T) {
	e := newEnv(t)
	var logs bytes.Buffer
	store, err := idem.New(e.client, e.processed, func(o *idem.Options) {
		o.Logger = slog.New(slog.NewJSONHandler(&logs, nil))
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	first := []byte(`{"id":"evt_1","pending_webhooks":2}`)
	again := []byte(`{"id":"evt_1","pending_webhooks":1}`)
	msg := func(payload []byte, fp string) idem.Message {
		return idem.Message{ID: "evt_1", Source: "stripe", Payload: payload, Fingerprint: fp}
	}
	if res, err := store.Process(ctx, msg(first, "stripe:evt_1"), e.creditHandler(nil)); err != nil || res.Outcome != idem.Processed {
		t.Fatalf("first: %v %v", res.Outcome, err)
	}
	res, err := store.Process(ctx, msg(again, "stripe:evt_1"), e.creditHandler(nil))
	if err != nil || res.Outcome != idem.Duplicate || !res.PayloadChanged {
		t.Fatalf("changed bytes, same identity: want a Duplicate with PayloadChanged, got %v %v %v", res.Outcome, res.PayloadChanged, err)
	}
	if string(res.Record.Response) != "credited evt_1" || res.Record.PayloadDigest != idem.Fingerprint(first) {
		t.Errorf("stored record: %+v", res.Record)
	}
	var line map[string]any
	for l := range strings.SplitSeq(strings.TrimSpace(logs.String()), "\n") {
		_ = json.Unmarshal([]byte(l), &line)
	}
	if line["level"] != "INFO" || line["payloadChanged"] != true || line["payloadDigest"] != idem.Fingerprint(again) || line["storedPayloadDigest"] != idem.Fingerprint(first) {
		t.Errorf("want the change logged at INFO with both digests, got %v", line)
	}
	if res, err := store.Process(ctx, msg(first, "stripe:evt_1"), e.creditHandler(nil)); err != nil || res.PayloadChanged {
		t.Errorf("same bytes: want a Duplicate without PayloadChanged, got %v %v", res.PayloadChanged, err)
	}
	if _, err := store.Process(ctx, msg(again, "stripe:other"), e.creditHandler(nil)); !errors.Is(err, idem.ErrKeyReuse) {
		t.Errorf("another identity under the key: want key reuse, got %v", err)
	}
	out := store.ProcessBatch(ctx, []idem.Message{msg(again, "stripe:evt_1")}, func(context.Context, int, idem.Message) (idem.Effect, error) {
		return idem.Effect{Writes: []types.TransactWriteItem{e.credit("acc-9", 500)}}, nil
	})
	if out[0].Err != nil || out[0].Result.Outcome != idem.Duplicate || !out[0].Result.PayloadChanged {
		t.Errorf("batch: want a Duplicate with PayloadChanged, got %+v", out[0])
	}

	// A claim of the old kind: fingerprint = the bytes' digest, no digest
	// attribute. A delivery of the same bytes with an identity matches it.
	if _, err := store.Process(ctx, idem.Message{ID: "evt_old", Source: "stripe", Payload: first}, e.creditHandler(nil)); err != nil {
		t.Fatal(err)
	}
	if res, err := store.Process(ctx, msg(first, "stripe:evt_old"), e.creditHandler(nil)); err != nil || res.Outcome != idem.Duplicate {
		t.Errorf("an old claim, same bytes: want Duplicate, got %v %v", res.Outcome, err)
	}
	if got := e.balance(t, "acc-9"); got != 1000 {
		t.Errorf("balance: want 1000 (evt_1 and evt_old once each), got %d", got)
	}
}

// TestScopeKeepsKeysApart: a scope holding "#" would make (billing#eu,
// inv-7) and (billing, eu#inv-7) one key; it is refused before any call.
func TestScopeKeepsKeysApart(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	if _, err := idem.New(e.client, e.processed, func(o *idem.Options) { o.Scope = "billing#eu" }); err == nil || !strings.Contains(err.Error(), `"#"`) {
		t.Errorf("New with Scope billing#eu: want an error naming the '#', got %v", err)
	}
	_, err := e.store.Process(ctx, idem.Message{ID: "inv-7", Source: "billing#eu"}, e.creditHandler(nil))
	if !errors.Is(err, idem.ErrInvalid) || !strings.Contains(err.Error(), "Source") {
		t.Errorf("Source billing#eu as the scope: want an invalid error naming the Source, got %v", err)
	}
	if n := e.calls.Count("TransactWriteItems"); n != 0 {
		t.Errorf("calls: want 0, got %d", n)
	}
	if res, err := e.store.Process(ctx, idem.Message{ID: "eu#inv-7", Source: "billing"}, e.creditHandler(nil)); err != nil || res.Outcome != idem.Processed {
		t.Errorf("id eu#inv-7 in scope billing: want Processed, got %v %v", res.Outcome, err)
	}
	scoped, err := idem.New(e.client, e.processed, func(o *idem.Options) { o.Scope = "billing" })
	if err != nil {
		t.Fatal(err)
	}
	if _, err := scoped.Process(ctx, idem.Message{ID: "inv-8", Source: "billing#eu"}, e.creditHandler(nil)); err != nil {
		t.Errorf("with a Scope, the Source is a dimension only and may hold '#': %v", err)
	}
}

// TestMetricNamesCloudWatchTakes: a Source CloudWatch would drop is
// refused before any call (the namespace is emf.New's to check).
func TestMetricNamesCloudWatchTakes(t *testing.T) {
	e := newEnv(t)
	for _, tc := range []struct{ name, source, want string }{
		{"1,025 characters", strings.Repeat("s", 1025), "CloudWatch allows 1024"},
		{"blank", " \t ", "all spaces"},
		{"non-ASCII", "crédits", "control or non-ASCII"},
	} {
		t.Run("source "+tc.name, func(t *testing.T) {
			e.calls.Reset()
			_, err := e.store.Process(context.Background(), idem.Message{ID: "m", Source: tc.source}, e.creditHandler(nil))
			if !errors.Is(err, idem.ErrInvalid) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("want an invalid error saying %q, got %v", tc.want, err)
			}
			if n := e.calls.Count("TransactWriteItems"); n != 0 {
				t.Errorf("calls: want 0, got %d", n)
			}
			if _, err := sqsconsumer.New(e.store, func(context.Context, events.SQSMessage) (idem.Effect, error) { return idem.Effect{}, nil },
				func(o *sqsconsumer.Options) { o.Source = tc.source }); err == nil {
				t.Error("an adapter's New accepts it")
			}
		})
	}
	if _, err := e.store.Process(context.Background(), idem.Message{ID: "m", Source: strings.Repeat("s", 1024)}, e.creditHandler(nil)); err != nil {
		t.Errorf("a 1,024-character Source: %v", err)
	}
}

// TestBatchDeadlineFailsOnlyTheBlamed: in [A, A′, B], A commits, B's
// transaction conflicts and the backoff does not fit the deadline. A′, a
// copy of A, is A's Duplicate; only B fails, retryable.
func TestBatchDeadlineFailsOnlyTheBlamed(t *testing.T) {
	calls := 0
	fake := answerFunc(func(claims []string, _ int) error {
		calls++
		if slices.Contains(claims, "s#b") {
			return blame(claims, "s#b", "TransactionConflict")
		}
		return nil
	})
	// A backoff drawn below a day fits 50 ms once in 1.7 million runs;
	// below a second it did one run in twenty.
	store, err := idem.New(fake, "processed", func(o *idem.Options) { o.BackoffBase, o.BackoffMax = 24*time.Hour, 24*time.Hour })
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	batch := []idem.Message{{ID: "a", Source: "s"}, {ID: "a", Source: "s"}, {ID: "b", Source: "s"}}
	out := store.ProcessBatch(ctx, batch, func(context.Context, int, idem.Message) (idem.Effect, error) {
		// One item for all: A and B go in transactions of their own.
		return idem.Effect{Writes: []types.TransactWriteItem{{ConditionCheck: &types.ConditionCheck{
			TableName: aws.String("t"), Key: map[string]types.AttributeValue{"k": &types.AttributeValueMemberS{Value: "same"}},
			ConditionExpression: aws.String("attribute_exists(k)"),
		}}}}, nil
	})
	if got := []string{kind(out[0]), kind(out[1]), kind(out[2])}; !slices.Equal(got, []string{"Processed", "Duplicate", "Retryable"}) {
		t.Errorf("want [Processed Duplicate Retryable], got %v", got)
	}
	if calls != 2 {
		t.Errorf("calls: want 2, got %d", calls)
	}
}

// TestErrorsSayWhatHappened: a ValidationError on the claim names the
// claim, on an outbox item its message, and RetryableError.Attempts counts
// every send.
func TestErrorsSayWhatHappened(t *testing.T) {
	fake := &scripted{errs: []error{cancelled("ValidationError", "None")}}
	store, err := idem.New(fake, "processed", func(o *idem.Options) {})
	if err != nil {
		t.Fatal(err)
	}
	_, err = store.Process(context.Background(), idem.Message{ID: "m", Source: "s"}, noop)
	if !errors.Is(err, idem.ErrInvalid) || !strings.Contains(err.Error(), "the claim: ValidationError") || strings.Contains(err.Error(), "-1") {
		t.Errorf("want the claim named, got %v", err)
	}
	// An outgoing message's outbox item is named as such, not by its index
	// among the writes.
	fake = &scripted{errs: []error{cancelled("None", "ValidationError")}}
	if store, err = idem.New(fake, "processed"); err != nil {
		t.Fatal(err)
	}
	_, err = store.Process(context.Background(), idem.Message{ID: "m", Source: "s"}, func(context.Context, idem.Message) (idem.Effect, error) {
		return idem.Effect{Messages: []idem.OutgoingMessage{{Destination: "https://sqs.us-east-1.amazonaws.com/1/q", Body: "b"}}}, nil
	})
	if want := "the outgoing message "; !errors.Is(err, idem.ErrInvalid) || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "effect write") {
		t.Errorf("want %q named, got %v", want, err)
	}
	fake = &scripted{errs: []error{cancelled("TransactionConflict"), cancelled("TransactionConflict"), io.ErrUnexpectedEOF}}
	store, err = idem.New(fake, "processed", func(o *idem.Options) {
		o.BackoffBase, o.BackoffMax = time.Microsecond, time.Microsecond
	})
	if err != nil {
		t.Fatal(err)
	}
	_, err = store.Process(context.Background(), idem.Message{ID: "m", Source: "s"}, noop)
	var re *idem.RetryableError
	if !errors.As(err, &re) || re.Attempts != 3 {
		t.Errorf("want a *RetryableError after 3 sends, got %v", err)
	}
}

// TestAttemptsCountTheSDKsRetries: a RetryableError's Attempts counts every
// request the SDK sent, not the kit's calls: with DynamoDB answering 500 to
// each, the SDK's standard retryer sends the transaction 3 times in one
// call.
func TestAttemptsCountTheSDKsRetries(t *testing.T) {
	e := newEnv(t)
	faults := &idemtest.Faults{Rates: map[idemtest.FaultKind]float64{idemtest.FaultServerError: 1}, Operations: []string{"TransactWriteItems"}}
	noWait := func(o *dynamodb.Options) {
		o.Retryer = retry.NewStandard(func(so *retry.StandardOptions) {
			so.Backoff = retry.BackoffDelayerFunc(func(int, error) (time.Duration, error) { return 0, nil })
		})
	}
	failing, err := idem.New(idemtest.Client(idemtest.Endpoint(t), faults.Option, noWait), e.processed, func(o *idem.Options) { o.WritesInOneRegion = true })
	if err != nil {
		t.Fatal(err)
	}
	_, err = failing.Process(context.Background(), idem.Message{ID: "evt_500", Source: "credits"}, e.creditHandler(nil))
	var re *idem.RetryableError
	if !errors.As(err, &re) {
		t.Fatalf("want a *RetryableError, got %T: %v", err, err)
	}
	if re.Attempts != faults.Requests() || re.Attempts < 2 {
		t.Errorf("Attempts: want the %d requests the SDK sent (more than one), got %d", faults.Requests(), re.Attempts)
	}
}
