package sqsconsumer_test

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemkit/kit/idem"
	"github.com/idemkit/kit/idem/sqsconsumer"
)

func TestConcurrencyBound(t *testing.T) {
	e := newEnv(t)
	for _, tc := range []struct {
		name        string
		concurrency int
		records     func(i int) events.SQSMessage
		want        int // the bound: this many handlers at once, never more
	}{
		{"one at a time", 1, func(i int) events.SQSMessage { return record(fmt.Sprint("s1-", i), body(i)) }, 1},
		{"three", 3, func(i int) events.SQSMessage { return record(fmt.Sprint("s3-", i), body(i)) }, 3},
		{"default", 0, func(i int) events.SQSMessage { return record(fmt.Sprint("sd-", i), body(i)) }, 10},
		{"two FIFO groups", 10, func(i int) events.SQSMessage { return fifo(fmt.Sprint("f-", i), fmt.Sprint(i%2), body(i)) }, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// The first handlers wait until the bound is reached, so the test
			// sees it reached whatever the scheduling; the timer only keeps a
			// broken bound from hanging the test.
			const records = 24
			var (
				mu             sync.Mutex
				inFlight, most int
				reached        = make(chan struct{})
				once           sync.Once
			)
			h := newHandler(t, e.store, func(_ context.Context, rec events.SQSMessage) (idem.Effect, error) {
				mu.Lock()
				inFlight++
				most = max(most, inFlight)
				if inFlight >= tc.want {
					once.Do(func() { close(reached) })
				}
				mu.Unlock()
				defer func() {
					mu.Lock()
					inFlight--
					mu.Unlock()
				}()
				select {
				case <-reached:
				case <-time.After(30 * time.Second):
					once.Do(func() { close(reached) })
				}
				for range 10 {
					runtime.Gosched() // let a record over the bound, if any, start now
				}
				return e.handler(rec)
			}, func(o *sqsconsumer.Options) { o.Concurrency = tc.concurrency })
			var batch []events.SQSMessage
			for i := range records {
				batch = append(batch, tc.records(i))
			}
			resp, err := h(context.Background(), events.SQSEvent{Records: batch})
			if err != nil || len(resp.BatchItemFailures) != 0 {
				t.Fatalf("want no failures, got %v, %v", resp.BatchItemFailures, err)
			}
			if most != tc.want {
				t.Errorf("most handlers in flight: want %d, got %d", tc.want, most)
			}
		})
	}
}

func body(i int) string { return fmt.Sprintf(`{"account":"acc-%d","cents":1}`, i%3) }

func TestDeadlineMargin(t *testing.T) {
	e := newEnv(t)
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	for _, tc := range []struct {
		name   string
		ctx    func(t *testing.T) context.Context
		margin time.Duration
		skip   bool
	}{
		{"within the default margin", deadlineIn(time.Second), 0, true},
		{"within a set margin", deadlineIn(time.Minute), 2 * time.Minute, true},
		{"outside the margin", deadlineIn(time.Minute), 0, false},
		{"no deadline", func(*testing.T) context.Context { return context.Background() }, 0, false},
		{"context done", func(*testing.T) context.Context { return cancelled }, 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			batch := []events.SQSMessage{
				record(tc.name+"-1", `{"account":"acc-1","cents":1}`),
				fifo(tc.name+"-2", "g", `{"account":"acc-1","cents":1}`),
				fifo(tc.name+"-3", "g", `{"account":"acc-1","cents":1}`),
			}
			before, claims := e.Balance(t, "acc-1"), e.Claims(t)
			got := e.run(t, tc.ctx(t), batch, func(o *sqsconsumer.Options) { o.DeadlineMargin = tc.margin })
			if !tc.skip {
				checkFailed(t, got)
				return
			}
			checkFailed(t, got, tc.name+"-1", tc.name+"-2", tc.name+"-3")
			for _, r := range batch {
				if e.runs.ran(r.MessageId) {
					t.Errorf("%s ran within the deadline margin", r.MessageId)
				}
			}
			if b, c := e.Balance(t, "acc-1"), e.Claims(t); b != before || c != claims {
				t.Errorf("balance %d → %d, claims %d → %d: want no change", before, b, claims, c)
			}
			checkOutcomes(t, e.outcomes(t), map[idem.Outcome]int{idem.Failed: 3})
			if !strings.Contains(e.logs.String(), "the deadline is near") {
				t.Errorf("skipped records are not logged:\n%s", e.logs.String())
			}
		})
		e.outcomes(t)
	}
}

func TestRunningRecordsStopAtHalfTheMargin(t *testing.T) {
	e := newEnv(t)
	deadline := time.Now().Add(time.Hour)
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	var got time.Time
	h := newHandler(t, e.store, func(ctx context.Context, rec events.SQSMessage) (idem.Effect, error) {
		got, _ = ctx.Deadline()
		return e.handler(rec)
	}, func(o *sqsconsumer.Options) { o.DeadlineMargin = 10 * time.Minute })
	if resp, err := h(ctx, events.SQSEvent{Records: []events.SQSMessage{record("m1", `{"account":"acc-9","cents":1}`)}}); err != nil || len(resp.BatchItemFailures) != 0 {
		t.Fatalf("want no failures, got %v, %v", resp.BatchItemFailures, err)
	}
	if want := deadline.Add(-5 * time.Minute); !got.Equal(want) {
		t.Errorf("handler's deadline: want %v, got %v", want, got)
	}
}

func deadlineIn(d time.Duration) func(t *testing.T) context.Context {
	return func(t *testing.T) context.Context {
		ctx, cancel := context.WithDeadline(context.Background(), time.Now().Add(d))
		t.Cleanup(cancel)
		return ctx
	}
}

func TestKeyFailuresAreReported(t *testing.T) {
	e := newEnv(t)
	numberKey := record("m-number", `{"account":"acc-9","cents":1}`)
	numberKey.MessageAttributes = map[string]events.SQSMessageAttribute{sqsconsumer.KeyAttribute: {DataType: "Number", StringValue: aws.String("7")}}
	batch := []events.SQSMessage{
		record("m-ok", `{"account":"acc-9","cents":1}`),
		numberKey,
		record("m-empty", `{"account":"acc-9","cents":1}`, sqsconsumer.KeyAttribute, ""),
		record("m-panic", `{"account":"acc-9","cents":1}`),
		record("", `{"account":"acc-9","cents":1}`),
	}
	got := e.run(t, context.Background(), batch, func(o *sqsconsumer.Options) {
		o.Key = func(rec events.SQSMessage) (string, error) {
			if rec.MessageId == "m-panic" {
				panic("no key here")
			}
			return sqsconsumer.DefaultKey(rec)
		}
	})
	checkFailed(t, got, "m-number", "m-empty", "m-panic", "")
	e.checkBalances(t, map[string]int{"acc-9": 1})
	checkOutcomes(t, e.outcomes(t), map[idem.Outcome]int{idem.Processed: 1, idem.Failed: 4})
	for _, want := range []string{`data type \"Number\"`, "is empty", "no key here", sqsconsumer.ErrNoKey.Error()} {
		if !strings.Contains(e.logs.String(), want) {
			t.Errorf("log does not say %q:\n%s", want, e.logs.String())
		}
	}
}

func TestKeyReuseFails(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	checkFailed(t, e.run(t, ctx, []events.SQSMessage{record("m1", `{"account":"acc-9","cents":500}`, sqsconsumer.KeyAttribute, "evt_1")}))
	checkFailed(t, e.run(t, ctx, []events.SQSMessage{record("m2", `{"account":"acc-9","cents":900}`, sqsconsumer.KeyAttribute, "evt_1")}), "m2")
	e.checkBalances(t, map[string]int{"acc-9": 500})
	checkOutcomes(t, e.outcomes(t), map[idem.Outcome]int{idem.Processed: 1, idem.KeyReuse: 1})
	if !strings.Contains(e.logs.String(), "storedFingerprint") {
		t.Errorf("key reuse is logged without both fingerprints:\n%s", e.logs.String())
	}
}

func TestRecordedRejectionIsSuccess(t *testing.T) {
	e := newEnv(t)
	debit := debit(e.Accounts, "acc-9", 100)
	h := newHandler(t, e.store, func(_ context.Context, rec events.SQSMessage) (idem.Effect, error) {
		eff := idem.Effect{Writes: []types.TransactWriteItem{debit}}
		if rec.Body == "recorded" {
			eff.Rejected = func(*idem.RejectedError) ([]byte, error) { return []byte("insufficient funds"), nil }
		}
		return eff, nil
	})
	resp, err := h(context.Background(), events.SQSEvent{Records: []events.SQSMessage{record("m1", "recorded"), record("m2", "unrecorded")}})
	if err != nil || len(resp.BatchItemFailures) != 1 || resp.BatchItemFailures[0].ItemIdentifier != "m2" {
		t.Fatalf("want only the unrecorded rejection m2 failed, got %v, %v", resp.BatchItemFailures, err)
	}
	checkOutcomes(t, e.outcomes(t), map[idem.Outcome]int{idem.Rejected: 1, idem.Failed: 1})
}

func TestKeysAreScopedByQueue(t *testing.T) {
	e := newEnv(t)
	other := record("m2", `{"account":"acc-9","cents":1}`, sqsconsumer.KeyAttribute, "k")
	other.EventSourceARN = "arn:aws:sqs:us-east-1:123456789012:refunds"
	batch := []events.SQSMessage{record("m1", `{"account":"acc-9","cents":1}`, sqsconsumer.KeyAttribute, "k"), other}
	checkFailed(t, e.run(t, context.Background(), batch))
	e.checkBalances(t, map[string]int{"acc-9": 2})
	// One Source for both queues: one scope, so one effect.
	batch[0].MessageAttributes[sqsconsumer.KeyAttribute] = events.SQSMessageAttribute{DataType: "String", StringValue: aws.String("k2")}
	batch[1].MessageAttributes[sqsconsumer.KeyAttribute] = events.SQSMessageAttribute{DataType: "String", StringValue: aws.String("k2")}
	checkFailed(t, e.run(t, context.Background(), batch, func(o *sqsconsumer.Options) { o.Source = "credits" }))
	e.checkBalances(t, map[string]int{"acc-9": 3})
}
