package chaos_test

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/idemkit/kit/idem"
	"github.com/idemkit/kit/idem/cmd/internal/testphase"
	"github.com/idemkit/kit/idem/idemtest"
	"github.com/idemkit/kit/idem/internal/wire"
	"github.com/idemkit/kit/idem/outbox"
	"github.com/idemkit/kit/idem/sqsconsumer"
)

var outboxCredits = flag.Int("chaos.outboxcredits", 600, "credits TestChaosOutbox applies and announces")

const (
	outboxWorkers  = 8
	relayBatchSize = 25   // the stream event source mapping's BatchSize
	sqsFaultRate   = 0.04 // per kind, per SendMessageBatch: throttling, 5xx, accepted with the answer lost
	killRate       = 0.08 // per relay invoke, each of: killed before its send, after it and before the checkpoint
	streamRedo     = 0.08 // per stream batch: delivered again after its checkpoint
	ledgerRedo     = 0.15 // per ledger message: received again after it succeeded
	ledgerPollers  = 4    // concurrent invokes of the ledger's consumer
	creditsRound   = 100  // credits per round of the chain: credits, relay, ledger
)

// TestChaosOutbox: the chain of issue 13, every hop faulted. Credits are
// delivered 1 to 4 times under the DynamoDB faults of TestChaosReplay,
// each announcing itself through the outbox; the relay reads the claims
// table's stream as the event source mapping hands it over (filtered to
// outbox items), killed before its send, after it, and redelivered
// batches, and sends to a local SQS whose answers are throttled, fail or
// are lost after the message was accepted; the ledger's consumer, the
// kit's SQS adapter on a faulted DynamoDB, receives each message one or
// more times. In the end each credit is applied once in the accounts table
// and has exactly one ledger entry.
func TestChaosOutbox(t *testing.T) {
	start := time.Now()
	ctx := context.Background()
	outboxRounds := max(1, *outboxCredits/creditsRound)
	tb := newTables(t)
	idemtest.EnableStream(t, tb.client, tb.processed)
	entries := idemtest.CreateTable(t, tb.client, idemtest.Table{Name: "entries", HashKey: "entry"})
	dbFaults := dynamoFaults()
	phase := testphase.Start(t, "chaos outbox", "%d credits, each delivered 1 to 4 times and announced through the outbox, "+
		"relayed and sent to the ledger in %d rounds, every hop faulted", *outboxCredits, outboxRounds)
	faulty := idemtest.Client(idemtest.Endpoint(t), dbFaults.Option, quickRetries)
	quiet := func(o *idem.Options) { o.Logger = slog.New(slog.DiscardHandler) }

	srv, err := idemtest.StartSQS(ctx, func(o *idemtest.ServerOptions) { o.Log = io.Discard })
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Stop() })
	sqsKinds := []idemtest.FaultKind{idemtest.FaultThrottle, idemtest.FaultServerError, idemtest.FaultLostResponse}
	sqsFaults := &idemtest.Faults{Seed: *seed + 1, Operations: []string{"SendMessageBatch"}, Rates: map[idemtest.FaultKind]float64{}}
	for _, k := range sqsKinds {
		sqsFaults.Rates[k] = sqsFaultRate
	}
	// The relay makes about one SendMessageBatch per 5 credits, at make
	// test's size too few for these rates to meet each kind surely.
	sqsOnce := onceEach(sqsFaults, sqsKinds...)
	sqsClient := func(faults *idemtest.Faults) *sqs.Client {
		return sqs.NewFromConfig(aws.Config{Region: "us-east-1", Credentials: tb.client.Options().Credentials}, func(o *sqs.Options) {
			o.BaseEndpoint = aws.String(srv.Endpoint)
			o.Retryer = retry.NewStandard(func(so *retry.StandardOptions) { // as quickRetries
				so.Backoff = retry.BackoffDelayerFunc(func(attempt int, _ error) (time.Duration, error) {
					return rand.N(20 * time.Millisecond << min(attempt, 6)), nil
				})
			})
			if faults != nil {
				o.HTTPClient = &http.Client{Transport: faults}
			}
		})
	}
	plain := sqsClient(nil)
	q, err := plain.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("ledger")})
	if err != nil {
		t.Fatal(err)
	}
	queueURL := aws.ToString(q.QueueUrl)

	// Hop 1: the credits, each announced.
	store, err := idem.New(faulty, tb.processed, quiet)
	if err != nil {
		t.Fatal(err)
	}
	// The chain runs in rounds, each hop after the other, as a pipeline
	// would: the ledger's queue stays short, which moto's SQS needs (its
	// receive and delete scan every message held).
	rng := rand.New(rand.NewPCG(*seed, 0x0b0c))
	msgs := make([]*message, *outboxCredits)
	work := make([][]*message, outboxRounds)
	for i := range msgs {
		msgs[i] = &message{id: fmt.Sprint("credit-", i), key: fmt.Sprint("key-", i), account: fmt.Sprint("acc-", i%accounts),
			cents: 1 + rng.IntN(1000), copies: 1 + rng.IntN(4)}
		for range msgs[i].copies {
			work[i%outboxRounds] = append(work[i%outboxRounds], msgs[i])
		}
	}
	for _, w := range work {
		rng.Shuffle(len(w), func(i, j int) { w[i], w[j] = w[j], w[i] })
	}
	credit := func(m *message) idem.Handler {
		return func(context.Context, idem.Message) (idem.Effect, error) {
			body, _ := json.Marshal(map[string]any{"id": m.id, "account": m.account, "cents": m.cents})
			return idem.Effect{Writes: tb.effect(m.id, m.account, m.cents), Messages: []idem.OutgoingMessage{
				{Destination: queueURL, Type: "credit.applied", Body: string(body)},
			}}, nil
		}
	}
	var hop1 hopStats
	hop1Round := func(w []*message) {
		st := runUntilDone(t, w, outboxWorkers, func(m *message) error {
			_, err := store.Process(ctx, idem.Message{ID: m.key, Source: "credits", Payload: []byte(m.id)}, credit(m))
			return err
		})
		hop1.deliveries += st.deliveries
		hop1.failed += st.failed
	}

	// Hop 2: the stream, as the event source mapping delivers it to the
	// relay: outbox items only (its filter), in batches, checkpointed at
	// the first failure the relay reports.
	stream := idemtest.NewStreamReader(t, tb.client, tb.processed)
	relay, err := outbox.New(func(o *outbox.Options) {
		o.SQS = sqsClient(sqsFaults)
		o.Logger = slog.New(slog.DiscardHandler)
	})
	if err != nil {
		t.Fatal(err)
	}
	var relayed, invokes, killedBefore, killedAfter, redone, reported int
	esm := rand.New(rand.NewPCG(*seed, 0xe5))
	hop2Round := func(lastRound bool) {
		var records []events.DynamoDBEventRecord
		for _, r := range stream.Read(t) {
			if (r.EventName == "INSERT" || r.EventName == "MODIFY") && r.Change.NewImage[wire.KindAttr].DataType() == events.DataTypeString &&
				r.Change.NewImage[wire.KindAttr].String() == wire.Kind {
				records = append(records, r)
			}
		}
		start := invokes
		for p := 0; p < len(records); {
			if invokes++; invokes-start > 50*(len(records)/relayBatchSize+1) {
				t.Fatalf("the relay makes no progress at record %d of %d", p, len(records))
			}
			batch := records[p:min(p+relayBatchSize, len(records))]
			x := esm.Float64()
			// The last batch meets whichever of the relay's faults the
			// draws have not: every one at work at any size and seed.
			last := lastRound && p+len(batch) == len(records)
			switch {
			case last && killedBefore == 0:
				x = 0
			case last && killedAfter == 0:
				x = killRate
			}
			switch {
			case x < killRate: // killed before its send: a function error, the batch retried
				killedBefore++
				continue
			case x < 2*killRate: // killed after its send, before Lambda's checkpoint
				relayed += len(batch)
				_, _ = relay.Handle(ctx, events.DynamoDBEvent{Records: batch})
				killedAfter++
				continue
			}
			relayed += len(batch)
			resp, err := relay.Handle(ctx, events.DynamoDBEvent{Records: batch})
			if err != nil {
				t.Fatalf("relay: a function error: %v", err)
			}
			next := p + len(batch)
			if len(resp.BatchItemFailures) > 0 {
				reported++
				seq := resp.BatchItemFailures[0].ItemIdentifier
				next = -1
				for i, r := range batch {
					if r.Change.SequenceNumber == seq {
						next = p + i
					}
				}
				if next < 0 {
					t.Fatalf("relay: reported sequence number %s is not in the batch", seq)
				}
			}
			if esm.Float64() < streamRedo || last && redone == 0 { // the checkpoint lost: the batch again
				redone++
				continue
			}
			p = next
		}
	}

	// Hop 3: the ledger, through the kit's SQS adapter, each message
	// received once or more.
	lstore, err := idem.New(faulty, tb.processed, quiet)
	if err != nil {
		t.Fatal(err)
	}
	consume, err := sqsconsumer.New(lstore, func(_ context.Context, rec events.SQSMessage) (idem.Effect, error) {
		var c struct {
			Account string `json:"account"`
			Cents   int    `json:"cents"`
		}
		if err := json.Unmarshal([]byte(rec.Body), &c); err != nil {
			return idem.Effect{}, err
		}
		entry := aws.ToString(rec.MessageAttributes["IdempotencyKey"].StringValue)
		return idem.Effect{Writes: []types.TransactWriteItem{{Update: &types.Update{
			TableName:        aws.String(entries),
			Key:              map[string]types.AttributeValue{"entry": &types.AttributeValueMemberS{Value: entry}},
			UpdateExpression: aws.String("ADD applied :one SET account = :a, cents = :c"),
			ExpressionAttributeValues: map[string]types.AttributeValue{":one": &types.AttributeValueMemberN{Value: "1"},
				":a": &types.AttributeValueMemberS{Value: c.Account}, ":c": &types.AttributeValueMemberN{Value: strconv.Itoa(c.Cents)}},
		}}}}, nil
	}, func(o *sqsconsumer.Options) { o.Source = "ledger" })
	if err != nil {
		t.Fatal(err)
	}
	var hop3, hop3Failed, received atomic.Int64
	hop3Round := func() {
		var pollers sync.WaitGroup
		for w := range ledgerPollers { // the event source mapping's concurrent invokes
			pollers.Go(func() {
				redeliver := rand.New(rand.NewPCG(*seed, 0x1ed9+uint64(w)))
				for !t.Failed() {
					out, err := plain.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(queueURL), MaxNumberOfMessages: 10,
						VisibilityTimeout: 30, MessageAttributeNames: []string{"All"}, MessageSystemAttributeNames: []sqstypes.MessageSystemAttributeName{"All"}})
					if err != nil {
						t.Error(err)
						return
					}
					if len(out.Messages) == 0 {
						if drained(t, plain, queueURL) {
							return
						}
						time.Sleep(20 * time.Millisecond)
						continue
					}
					ev := events.SQSEvent{Records: make([]events.SQSMessage, len(out.Messages))}
					for i, m := range out.Messages {
						ev.Records[i] = idemtest.Received(m, "arn:aws:sqs:us-east-1:123456789012:ledger")
					}
					resp, err := consume(ctx, ev)
					if err != nil {
						t.Errorf("ledger consumer: a function error: %v", err)
						return
					}
					failed := map[string]bool{}
					for _, f := range resp.BatchItemFailures {
						failed[f.ItemIdentifier] = true
					}
					hop3.Add(int64(len(out.Messages)))
					hop3Failed.Add(int64(len(failed)))
					// As the event source mapping does: the successes deleted, the
					// failures (and, here, some successes: a redelivery) back.
					var del []sqstypes.DeleteMessageBatchRequestEntry
					var back []sqstypes.ChangeMessageVisibilityBatchRequestEntry
					for i, m := range out.Messages {
						id := aws.String(strconv.Itoa(i))
						if failed[aws.ToString(m.MessageId)] || redeliver.Float64() < ledgerRedo {
							back = append(back, sqstypes.ChangeMessageVisibilityBatchRequestEntry{Id: id, ReceiptHandle: m.ReceiptHandle})
						} else {
							del = append(del, sqstypes.DeleteMessageBatchRequestEntry{Id: id, ReceiptHandle: m.ReceiptHandle})
						}
					}
					if len(del) > 0 {
						if _, err := plain.DeleteMessageBatch(ctx, &sqs.DeleteMessageBatchInput{QueueUrl: aws.String(queueURL), Entries: del}); err != nil {
							t.Error(err)
							return
						}
					}
					if len(back) > 0 {
						if _, err := plain.ChangeMessageVisibilityBatch(ctx, &sqs.ChangeMessageVisibilityBatchInput{QueueUrl: aws.String(queueURL), Entries: back}); err != nil {
							t.Error(err)
							return
						}
					}
					if n := received.Add(int64(len(out.Messages))); n > int64(20*len(msgs)) {
						t.Errorf("the ledger's queue does not drain: %d receives for %d credits", n, len(msgs))
						return
					}
				}
			})
		}
		pollers.Wait()
	}

	var hop1Time, hop2Time, hop3Time time.Duration
	for r := range outboxRounds {
		began := time.Now()
		hop1Round(work[r])
		hop1Time += time.Since(began)
		began = time.Now()
		hop2Round(r == outboxRounds-1)
		hop2Time += time.Since(began)
		began = time.Now()
		hop3Round()
		hop3Time += time.Since(began)
		if t.Failed() {
			break
		}
		// A line every quarter: the rounds take minutes on a busy machine.
		if done := r + 1; done%max(1, outboxRounds/4) == 0 && done < outboxRounds {
			phase.Logf("round %d of %d: %d credit deliveries, %d records relayed, %d ledger deliveries",
				done, outboxRounds, hop1.deliveries, relayed, hop3.Load())
		}
	}

	// Each credit applied once, and exactly one ledger entry for each.
	applied := tb.scan(t, tb.ledger, "id", "applied")
	ledger := tb.scan(t, entries, "entry", "applied")
	cents := tb.scan(t, entries, "entry", "cents")
	balances := tb.scan(t, tb.accounts, "account", "balance")
	want := map[string]int{}
	double, lost := 0, 0
	sent := map[string]string{} // claim key → its message's outbox id
	for _, m := range idemtest.Outbox(t, tb.client, tb.processed) {
		sent[m.ClaimKey] = m.ID
	}
	for _, m := range msgs {
		want[m.account] += m.cents
		entry := sent["credits#"+m.key]
		switch {
		case applied[m.id] != 1:
			t.Errorf("%s: applied %d times", m.id, applied[m.id])
		case ledger[entry] == 0:
			lost++
			t.Errorf("%s: no ledger entry %s", m.id, entry)
		case ledger[entry] > 1:
			double++
			t.Errorf("%s: ledger entry %s applied %d times", m.id, entry, ledger[entry])
		case cents[entry] != m.cents:
			t.Errorf("%s: ledger entry %s holds %d cents, want %d", m.id, entry, cents[entry], m.cents)
		}
		delete(ledger, entry)
	}
	if len(ledger) != 0 {
		t.Errorf("%d ledger entries no credit made", len(ledger))
	}
	if fmt.Sprint(balances) != fmt.Sprint(want) {
		t.Errorf("balances: want %v, got %v", want, balances)
	}
	deliveries := hop1.deliveries + relayed + int(hop3.Load())
	if deliveries < 10_000 && *outboxCredits >= 2000 {
		t.Errorf("want at least 10,000 deliveries across the hops, got %d", deliveries)
	}
	everyKind(t, "DynamoDB", idemtest.FaultKinds, dbFaults)
	everyKind(t, "SQS SendMessageBatch", sqsKinds, append([]*idemtest.Faults{sqsFaults}, sqsOnce...)...)
	if killedBefore == 0 || killedAfter == 0 || redone == 0 {
		t.Errorf("want every fault of the relay at work: killed before %d, after %d, batches redone %d", killedBefore, killedAfter, redone)
	}
	t.Logf("chaos outbox (seed %d): %d credits, %d deliveries (credits %d, %d failed and redelivered; relay %d records in %d invokes, killed %d before and %d after the send, %d batches redone, %d reported a failure; ledger %d, %d failed), "+
		"DynamoDB %d requests %v, SQS SendMessageBatch %d requests %v, %d double, %d lost, %s (hops %s, %s, %s)",
		*seed, len(msgs), deliveries, hop1.deliveries, hop1.failed, relayed, invokes, killedBefore, killedAfter, redone, reported, hop3.Load(), hop3Failed.Load(),
		dbFaults.Requests(), dbFaults.Counts(), sqsFaults.Requests(), faultCounts(append([]*idemtest.Faults{sqsFaults}, sqsOnce...)...), double, lost, time.Since(start).Round(100*time.Millisecond),
		hop1Time.Round(100*time.Millisecond), hop2Time.Round(100*time.Millisecond), hop3Time.Round(100*time.Millisecond))
	phase.End("%d credits, %d deliveries across the hops, DynamoDB faults %s, %d ledger entries double, %d lost", len(msgs), deliveries, contention(dbFaults.Counts()), double, lost)
}

// drained says whether the queue holds no message, visible or in flight.
func drained(t *testing.T, c *sqs.Client, url string) bool {
	out, err := c.GetQueueAttributes(context.Background(), &sqs.GetQueueAttributesInput{QueueUrl: aws.String(url),
		AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameApproximateNumberOfMessages, sqstypes.QueueAttributeNameApproximateNumberOfMessagesNotVisible}})
	if err != nil {
		t.Error(err)
		return true
	}
	return out.Attributes[string(sqstypes.QueueAttributeNameApproximateNumberOfMessages)] == "0" &&
		out.Attributes[string(sqstypes.QueueAttributeNameApproximateNumberOfMessagesNotVisible)] == "0"
}

// hopStats counts one hop's deliveries.
type hopStats struct{ deliveries, failed int }

// runUntilDone delivers work with n workers, each failure delivered again
// after a short pause, until every delivery has succeeded; a delivery that
// fails giveUp times is reported and dropped.
func runUntilDone(t *testing.T, work []*message, n int, deliver func(*message) error) hopStats {
	t.Helper()
	ch := make(chan *message, len(work))
	for _, m := range work {
		ch <- m
	}
	var pending, deliveries, failed atomic.Int64
	pending.Store(int64(len(work)))
	var wg sync.WaitGroup
	for w := range n {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(*seed, uint64(w)+0x0b))
			for pending.Load() > 0 {
				var m *message
				select {
				case m = <-ch:
				case <-time.After(20 * time.Millisecond):
					continue
				}
				deliveries.Add(1)
				err := deliver(m)
				if err == nil {
					m.ok.Add(1)
					pending.Add(-1)
					continue
				}
				failed.Add(1)
				if !errors.Is(err, idem.ErrRetryable) && !isStoreError(err) {
					t.Errorf("%s: a failure no retry fixes: %v", m.id, err)
				}
				if m.failed.Add(1) > giveUp {
					t.Errorf("%s: given up after %d failures: %v", m.id, giveUp, err)
					pending.Add(-1)
					continue
				}
				time.Sleep(time.Duration(r.IntN(5)) * time.Millisecond)
				ch <- m
			}
		})
	}
	wg.Wait()
	return hopStats{deliveries: int(deliveries.Load()), failed: int(failed.Load())}
}

func isStoreError(err error) bool {
	var se *idem.StoreError
	return errors.As(err, &se)
}
