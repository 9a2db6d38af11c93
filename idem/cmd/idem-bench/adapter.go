package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strconv"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemkit/kit/idem"
	"github.com/idemkit/kit/idem/sqsconsumer"
)

// sqsKit is this kit as the queue function runs it: records handed to
// the SQS adapter in events.SQSEvent batches, failures reported back.
type sqsKit struct {
	h func(context.Context, events.SQSEvent) (events.SQSEventResponse, error)
}

func newSQSKit(store *idem.Store, accounts string, batchMode bool) (*sqsKit, error) {
	h, err := sqsconsumer.New(store, func(_ context.Context, rec events.SQSMessage) (idem.Effect, error) {
		var m struct {
			Account string `json:"account"`
			Cents   int    `json:"cents"`
		}
		if err := json.Unmarshal([]byte(rec.Body), &m); err != nil {
			return idem.Effect{}, err
		}
		up := creditUpdate(accounts, message{account: m.Account, cents: m.Cents})
		return idem.Effect{Writes: []types.TransactWriteItem{{Update: up}}, Response: []byte("ok")}, nil
	}, func(o *sqsconsumer.Options) { o.BatchTransactions = batchMode })
	if err != nil {
		return nil, err
	}
	return &sqsKit{h: h}, nil
}

// cachedKit is sqsKit over a Store with its claim cache on: a duplicate
// delivered to the same warm environment costs no call. A type of its own
// keeps it out of the batch tables, which compare the two modes.
type cachedKit struct{ *sqsKit }

// quietStore logs as deployed (JSON at INFO) into io.Discard, so a
// duplicate's log record costs what it costs without flooding the terminal.
func quietStore(o *idem.Options) {
	o.Logger = slog.New(slog.NewJSONHandler(io.Discard, nil))
}

func (k *sqsKit) deliver(ctx context.Context, m message, failAfterEffect bool) error {
	if failed := k.deliverBatch(ctx, []message{m}); len(failed) > 0 {
		return errors.New("reported failed")
	}
	if failAfterEffect {
		// The effect commits with the claim; the nearest failure is the
		// process dying before it answers, so SQS redelivers.
		return errAfterEffect
	}
	return nil
}

// deliverBatch hands the batch to the adapter and returns the records it
// reported failed, for the queue to deliver again.
func (k *sqsKit) deliverBatch(ctx context.Context, batch []message) []message {
	ev := events.SQSEvent{Records: make([]events.SQSMessage, len(batch))}
	for i, m := range batch {
		ev.Records[i] = events.SQSMessage{
			MessageId: m.id, EventSource: "aws:sqs", EventSourceARN: "arn:aws:sqs:us-east-1:123456789012:bench",
			Body: fmt.Sprintf(`{"account":%q,"cents":%d}`, m.account, m.cents),
		}
		if m.attempt > 0 {
			ev.Records[i].Attributes = map[string]string{"ApproximateReceiveCount": strconv.Itoa(m.attempt)}
		}
	}
	resp, _ := k.h(ctx, ev) // the adapter never returns a function error
	var failed []message
	for _, m := range batch {
		if slices.ContainsFunc(resp.BatchItemFailures, func(f events.SQSBatchItemFailure) bool { return f.ItemIdentifier == m.id }) {
			failed = append(failed, m)
		}
	}
	return failed
}

// batchStat is one scenario of the batch table, for one mode.
type batchStat struct {
	calls    float64 // TransactWriteItems per batch
	p50, p99 time.Duration
}

// batchScenarios are the batches of 10 the adapter's two modes are
// compared on. Each returns, for batch b, what is delivered beforehand
// (untimed) and the batch that is timed and counted.
var batchScenarios = []struct {
	name  string
	batch func(prefix string, b int) (before, batch []message)
}{
	{"10 new messages", func(p string, b int) ([]message, []message) {
		return nil, tenOf(p, b, 10, 10)
	}},
	{"the same 10, redelivered", func(p string, b int) ([]message, []message) {
		return tenOf(p, b, 10, 10), tenOf(p, b, 10, 10)
	}},
	{"5 redelivered, 5 new", func(p string, b int) ([]message, []message) {
		return tenOf(p, b, 10, 10)[:5], tenOf(p, b, 10, 10)
	}},
	{"5 new messages, each twice", func(p string, b int) ([]message, []message) {
		return nil, tenOf(p, b, 5, 10)
	}},
	{"10 new messages on 3 accounts", func(p string, b int) ([]message, []message) {
		return nil, tenOf(p, b, 10, 3)
	}},
}

// tenOf is batch b of 10 records: ids cycle through distinct messages,
// accounts through the given number.
func tenOf(prefix string, b, distinct, accounts int) []message {
	out := make([]message, 10)
	for j := range out {
		out[j] = message{id: fmt.Sprintf("%s-b%d-%d", prefix, b, j%distinct), account: fmt.Sprintf("%s-b%d-acc-%d", prefix, b, j%distinct%accounts), cents: 1}
	}
	return out
}

// batchTables times n batches of each scenario through each kit, taking
// turns, counts their calls, and returns each kit's line per scenario;
// every record must succeed.
func batchTables(ctx context.Context, sus []setup, kits []*sqsKit, n int) ([][]batchStat, error) {
	out := make([][]batchStat, len(kits))
	for s, sc := range batchScenarios {
		took := make([][]time.Duration, len(kits))
		calls := make([]int, len(kits))
		for b := range n {
			for k, kit := range kits {
				before, batch := sc.batch(fmt.Sprintf("k%d-sc%d", k, s), b)
				if len(before) > 0 && len(kit.deliverBatch(ctx, before)) > 0 {
					return nil, fmt.Errorf("%s: batch %d: a record failed before the timed delivery", sc.name, b)
				}
				sus[k].calls.Reset()
				start := time.Now()
				failed := kit.deliverBatch(ctx, batch)
				took[k] = append(took[k], time.Since(start))
				calls[k] += sus[k].calls.Count("TransactWriteItems")
				if len(failed) > 0 {
					return nil, fmt.Errorf("%s: batch %d: %d record(s) reported failed", sc.name, b, len(failed))
				}
			}
		}
		for k := range kits {
			out[k] = append(out[k], batchStat{calls: float64(calls[k]) / float64(n), p50: percentile(took[k], 0.5), p99: percentile(took[k], 0.99)})
		}
	}
	return out, nil
}
