package main

// The hot-item section's lines: each is a name and how one environment
// delivers a message or a batch. To add a line, add a hotLine to hotLines;
// the section runs it at every (environments, accounts) and the report's
// table gains its rows.

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws/ratelimit"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemkit/kit/idem"
	"github.com/idemkit/kit/idem/sqsconsumer"
)

// hotDeliver is one environment's delivery of a batch (one message for a
// per-message line) within ctx's deadline; it returns the messages that
// failed, for the queue to deliver again. Each message's attempt is its
// receive count (1 on its first delivery).
type hotDeliver func(ctx context.Context, batch []message) (failed []message)

// hotLine is one way of crediting: env makes one environment's
// deliverer, with its own Store and state, as a separate Lambda
// environment has them; batch is how many messages the queue hands it at
// once (1, or 10 as SQS's default batch).
type hotLine struct {
	name  string
	batch int
	env   func(e hotEnv) (hotDeliver, error)
	// fold says the line's credits are entries, applied to the balance
	// from the entries table's stream (hotaggregate.go).
	fold bool
}

// hotEnv is what one environment starts with: its own SDK client
// (through the model, its calls counted with the run's) and the section's
// tables. causes is where a line counts why its deliveries failed: a
// Store reports to it as an Observer (storeOptions), other code calls
// causes.add(causeOf(err)).
type hotEnv struct {
	client              *dynamodb.Client
	processed, accounts string
	entries             string // the entries table, for a fold line
	causes              *hotCauses
}

// storeOptions are a Store's options in the section: its logs
// discarded, its failures' causes counted, then optFns.
func (e hotEnv) storeOptions(optFns ...func(*idem.Options)) []func(*idem.Options) {
	return append([]func(*idem.Options){quietStore, func(o *idem.Options) { o.Observers = append(o.Observers, e.causes) }}, optFns...)
}

// The section's lines' names, for the targets.
const (
	hotProcess  = "this kit, `Store.Process` per message (its default path)"
	hotSQS      = "this kit, the SQS adapter per record, batches of 10"
	hotSQSBatch = "this kit, the SQS adapter with `BatchTransactions`, batches of 10"
	hotLock     = "Go two-phase lock (Powertools' algorithm), per message"
	hotLockSQS  = "Go two-phase lock, batches of 10, records at once (as Powertools' SQS batch processing)"
	ptHotName   = "Powertools for TypeScript, per message (its default configuration)"
)

// hotLines are the Go lines, in the report's order.
var hotLines = []hotLine{
	{name: hotProcess, batch: 1, env: func(e hotEnv) (hotDeliver, error) {
		store, err := idem.New(e.client, e.processed, e.storeOptions()...)
		if err != nil {
			return nil, err
		}
		return perMessage(func(ctx context.Context, m message) error {
			res, err := store.Process(ctx, idem.Message{ID: m.id, Source: "bench", Payload: []byte(m.account)},
				func(context.Context, idem.Message) (idem.Effect, error) {
					return hotCredit(e.accounts, m.account, m.cents)
				})
			if err == nil && res.Outcome != idem.Processed && res.Outcome != idem.Duplicate {
				err = fmt.Errorf("outcome %v", res.Outcome)
			}
			return err
		}), nil
	}},
	{name: hotSQS, batch: 10, env: hotSQSLine(false)},
	{name: hotSQSBatch, batch: 10, env: hotSQSLine(true)},
	{name: hotAggregate, batch: 1, env: entryLine, fold: true},
	{name: hotAggregateSQS, batch: 10, env: entrySQSLine, fold: true},
	{name: hotLock, batch: 1, env: func(e hotEnv) (hotDeliver, error) {
		tp := &twoPhase{c: e.client, processed: e.processed, accounts: e.accounts, now: time.Now}
		return perMessage(e.counted(func(ctx context.Context, m message) error { return tp.deliver(ctx, m, false) })), nil
	}},
	{name: hotLockSQS, batch: 10, env: func(e hotEnv) (hotDeliver, error) {
		tp := &twoPhase{c: e.client, processed: e.processed, accounts: e.accounts, now: time.Now}
		return atOnce(e.counted(func(ctx context.Context, m message) error { return tp.deliver(ctx, m, false) })), nil
	}},
}

// hotCredit is the credit as a user writes it: an Update with an ADD.
func hotCredit(accounts, account string, cents int) (idem.Effect, error) {
	w, err := idem.Update(accounts, map[string]string{"account": account},
		expression.Add(expression.Name("balance"), expression.Value(cents)))
	return idem.Effect{Writes: []types.TransactWriteItem{w}, Response: []byte("ok")}, err
}

// hotSQSLine is this kit through its SQS adapter, as the queue function
// runs it: each record with its receive count (ApproximateReceiveCount).
func hotSQSLine(batchTransactions bool) func(hotEnv) (hotDeliver, error) {
	return func(e hotEnv) (hotDeliver, error) {
		store, err := idem.New(e.client, e.processed, e.storeOptions()...)
		if err != nil {
			return nil, err
		}
		h, err := sqsconsumer.New(store, sqsconsumer.JSONHandler(func(_ context.Context, c hotBody, _ events.SQSMessage) (idem.Effect, error) {
			return hotCredit(e.accounts, c.Account, c.Cents)
		}), func(o *sqsconsumer.Options) { o.BatchTransactions = batchTransactions })
		if err != nil {
			return nil, err
		}
		return (&sqsKit{h: h}).deliverBatch, nil
	}
}

// hotBody is an SQS record's body in the section (sqsKit.deliverBatch).
type hotBody struct {
	Account string `json:"account"`
	Cents   int    `json:"cents"`
}

// perMessage delivers a batch of one through f.
func perMessage(f func(context.Context, message) error) hotDeliver {
	return func(ctx context.Context, batch []message) []message {
		var failed []message
		for _, m := range batch {
			if f(ctx, m) != nil {
				failed = append(failed, m)
			}
		}
		return failed
	}
}

// atOnce delivers a batch's records at once through f, as Powertools for
// TypeScript's BatchProcessor does by default (processInParallel).
func atOnce(f func(context.Context, message) error) hotDeliver {
	return func(ctx context.Context, batch []message) []message {
		var (
			mu     sync.Mutex
			failed []message
			wg     sync.WaitGroup
		)
		for _, m := range batch {
			wg.Go(func() {
				if f(ctx, m) != nil {
					mu.Lock()
					failed = append(failed, m)
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		return failed
	}
}

// counted is f with the cause of each of its failures counted.
func (e hotEnv) counted(f func(context.Context, message) error) func(context.Context, message) error {
	return func(ctx context.Context, m message) error {
		err := f(ctx, m)
		if err != nil {
			e.causes.add(causeOf(err))
		}
		return err
	}
}

// hotCauses counts why deliveries failed; as an idem.Observer it counts
// a Store's Failed and InFlight outcomes by their error.
type hotCauses struct {
	mu sync.Mutex
	n  map[string]int
}

func (c *hotCauses) add(cause string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n == nil {
		c.n = map[string]int{}
	}
	c.n[cause]++
}

func (c *hotCauses) Observe(_ context.Context, o idem.Observation) {
	if o.Outcome == idem.Failed || o.Outcome == idem.InFlight || o.Outcome == idem.Contended {
		c.add(causeOf(o.Err))
	}
}

func (c *hotCauses) counts() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := map[string]int{}
	for k, v := range c.n {
		out[k] = v
	}
	return out
}

// The causes a failed delivery is counted under.
const (
	causeContention = "contention" // a transaction conflict: a cancellation naming only TransactionConflict, or TransactionConflictException
	causeThrottling = "throttling" // the partition limit: ThrottlingException, ThrottlingError, the SDK's retry quota
	causeDeadline   = "deadline"   // the delivery's deadline passed
	causeInFlight   = "in flight"  // another delivery of the message held it (the lock's IN_PROGRESS record, the kit's ErrInFlight)
	causeOther      = "other"
)

// causeOf names why err failed a delivery.
func causeOf(err error) string {
	var (
		tce *types.TransactionCanceledException
		tc  *types.TransactionConflictException
		rc  *types.ReplicatedWriteConflictException
		th  *types.ThrottlingException
		pt  *types.ProvisionedThroughputExceededException
	)
	switch {
	case errors.As(err, &tce):
		conflict := false
		for _, r := range tce.CancellationReasons {
			switch code := deref(r.Code); code {
			case "None", "":
			case "TransactionConflict":
				conflict = true
			case "ThrottlingError", "ProvisionedThroughputExceeded":
				return causeThrottling
			default:
				return causeOther
			}
		}
		if conflict {
			return causeContention
		}
	case errors.As(err, &tc), errors.As(err, &rc):
		return causeContention
	case errors.As(err, &th), errors.As(err, &pt):
		return causeThrottling
	case errors.Is(err, context.DeadlineExceeded):
		return causeDeadline
	case errors.Is(err, errInProgress), errors.Is(err, idem.ErrInFlight), errors.Is(err, idem.ErrLeaseHeld):
		return causeInFlight
	}
	if q := (ratelimit.QuotaExceededError{}); errors.As(err, &q) {
		return causeThrottling // the SDK's retries of throttled calls ran out of tokens
	}
	return causeOther
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
