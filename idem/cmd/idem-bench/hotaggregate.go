package main

// The hot-item path the guide recommends: each credit commits an entry of
// its own with its claim (never contended), and stream.Aggregate, on the
// entries table's stream, brings the balance up to date, many entries a
// transaction. A credit is made when its entry commits (its time, and the
// line's credits a second, are the entries'); the delay the stream adds,
// the entry's commit to its fold into the balance, is kept apart, and the
// run ends only once the balance holds every credit.

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemkit/kit/idem"
	"github.com/idemkit/kit/idem/idemtest"
	"github.com/idemkit/kit/idem/sqsconsumer"
	idemstream "github.com/idemkit/kit/idem/stream"
)

// The entries lines: per message, as a webhook's deliveries come, and
// through the SQS adapter, whose BatchTransactions commits a batch's ten
// claims and ten entries in one transaction (no two of them on one item).
const (
	hotAggregate    = "this kit, an entry per credit, the balance from its stream (`stream.Aggregate`), per message"
	hotAggregateSQS = "this kit, an entry per credit, the balance from its stream, the SQS adapter with `BatchTransactions`, batches of 10"
)

// The stream's event source mapping, as emulated: batches of up to
// foldBatch records, and a poll every foldPoll (Lambda polls a shard
// about four times a second) on the run's clock, which -hotscale slows
// as it slows every latency.
const (
	foldBatch = 100
	foldPoll  = 250 * time.Millisecond
)

// entryLine is hotAggregate's delivery: the entry, with its claim.
func entryLine(e hotEnv) (hotDeliver, error) {
	store, err := idem.New(e.client, e.processed, e.storeOptions()...)
	if err != nil {
		return nil, err
	}
	return perMessage(func(ctx context.Context, m message) error {
		_, err := store.Process(ctx, idem.Message{ID: m.id, Source: "bench", Payload: []byte(m.account)},
			func(context.Context, idem.Message) (idem.Effect, error) {
				w, err := idem.Put(e.entries, map[string]any{"entry": m.id, "account": m.account, "cents": m.cents})
				return idem.Effect{Writes: []types.TransactWriteItem{w}, Response: []byte("ok")}, err
			})
		return err
	}), nil
}

// entrySQSLine is hotAggregateSQS's delivery: each record's entry, named
// by its message id, with its claim.
func entrySQSLine(e hotEnv) (hotDeliver, error) {
	store, err := idem.New(e.client, e.processed, e.storeOptions()...)
	if err != nil {
		return nil, err
	}
	h, err := sqsconsumer.New(store, sqsconsumer.JSONHandler(func(_ context.Context, c hotBody, m events.SQSMessage) (idem.Effect, error) {
		w, err := idem.Put(e.entries, map[string]any{"entry": m.MessageId, "account": c.Account, "cents": c.Cents})
		return idem.Effect{Writes: []types.TransactWriteItem{w}, Response: []byte("ok")}, err
	}), func(o *sqsconsumer.Options) { o.BatchTransactions = true })
	if err != nil {
		return nil, err
	}
	return (&sqsKit{h: h}).deliverBatch, nil
}

// entries makes, once, the section's entries table and its stream's
// reader.
func (h *hotSection) entriesTable(ctx context.Context) error {
	if h.entries != "" {
		return nil
	}
	name, err := idemtest.CreateTableContext(ctx, h.local, idemtest.Table{Name: "bench-hot-entries", HashKey: "entry", Stream: true})
	if err != nil {
		return err
	}
	if h.entryStream, err = idemtest.OpenStream(ctx, h.local, name); err != nil {
		return err
	}
	h.entries = name
	return nil
}

// folder is one run's consumer of the entries' stream: when each of its
// messages was folded into the balance.
type folder struct {
	mu     sync.Mutex
	at     map[string]time.Time // message id → folded
	want   int
	prefix string
	done   chan struct{}
	err    error
}

// startFold starts the run's consumer: its own Store, its calls counted
// with the environments', through the model.
func (h *hotSection) startFold(ctx context.Context, calls *idemtest.CallCounter, causes *hotCauses, prefix string, n int) (*folder, error) {
	env := hotEnv{client: idemtest.Client(h.proxy.URL, calls.Option), processed: h.processed, accounts: h.accounts, causes: causes}
	store, err := idem.New(env.client, env.processed, env.storeOptions()...)
	if err != nil {
		return nil, err
	}
	handle, err := idemstream.Aggregate(store, func(_ context.Context, rec events.DynamoDBEventRecord) (idem.Effect, error) {
		img := rec.Change.NewImage
		cents, err := strconv.Atoi(img["cents"].Number())
		if err != nil {
			return idem.Effect{}, err
		}
		return hotCredit(h.accounts, img["account"].String(), cents)
	}, func(o *idemstream.AggregateOptions) { o.Source, o.Logger = "bench-fold", slog.New(slog.DiscardHandler) })
	if err != nil {
		return nil, err
	}
	f := &folder{at: map[string]time.Time{}, want: n, prefix: prefix, done: make(chan struct{})}
	go func() {
		defer close(f.done)
		f.err = f.loop(ctx, h.entryStream, handle, time.Duration(float64(foldPoll)*h.cfg.scale))
	}()
	return f, nil
}

// loop reads the stream and folds it, as the event source mapping hands
// it over: a batch checkpointed up to its first failure, which comes back
// first in the next batch.
func (f *folder) loop(ctx context.Context, r *idemtest.StreamReader, handle idemstream.DynamoDBHandler, poll time.Duration) error {
	var pending []events.DynamoDBEventRecord
	for tries := 0; f.count() < f.want; {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		recs, err := r.Next(ctx)
		if err != nil {
			return err
		}
		pending = append(pending, recs...)
		if len(pending) == 0 {
			time.Sleep(poll)
			continue
		}
		batch := pending[:min(foldBatch, len(pending))]
		bctx, cancel := context.WithTimeout(ctx, hotDeadline)
		resp, err := handle(bctx, events.DynamoDBEvent{Records: batch})
		cancel()
		if err != nil {
			return err
		}
		done := len(batch)
		if len(resp.BatchItemFailures) > 0 {
			if tries++; tries > 100 {
				return fmt.Errorf("the fold makes no progress at %s", resp.BatchItemFailures[0].ItemIdentifier)
			}
			for i, rec := range batch {
				if rec.Change.SequenceNumber == resp.BatchItemFailures[0].ItemIdentifier {
					done = i
				}
			}
		}
		f.folded(batch[:done], time.Now())
		pending = pending[done:]
	}
	return nil
}

func (f *folder) folded(recs []events.DynamoDBEventRecord, now time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, rec := range recs {
		if id := rec.Change.NewImage["entry"].String(); strings.HasPrefix(id, f.prefix+"-") {
			if _, ok := f.at[id]; !ok {
				f.at[id] = now
			}
		}
	}
}

func (f *folder) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.at)
}

// wait waits for every message to be folded, or the fold's failure.
func (f *folder) wait(timeout time.Duration) error {
	select {
	case <-f.done:
		return f.err
	case <-time.After(timeout):
		return fmt.Errorf("the fold took longer than %v: %d of %d folded", timeout, f.count(), f.want)
	}
}

// apply gives run the fold's delays: each entry's commit to its fold.
func (f *folder) apply(run *hotRun, q *hotQueue) {
	f.mu.Lock()
	defer f.mu.Unlock()
	run.lag = run.lag[:0]
	for i, m := range q.msgs {
		run.lag = append(run.lag, f.at[m.id].Sub(q.settled[i]))
	}
}
