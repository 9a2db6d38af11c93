package chaos_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/idemkit/kit/idem"
	"github.com/idemkit/kit/idem/cmd/internal/testphase"
	"github.com/idemkit/kit/idem/idemtest"
	"github.com/idemkit/kit/idem/internal/wire"
	"github.com/idemkit/kit/idem/sqsconsumer"
)

// TestRelayKilled runs the real functions/relay bootstrap under the Lambda
// Runtime Interface Emulator on a batch of the claims table's stream, with
// a proxy in front of SQS that kills it before its SendMessageBatch
// reaches SQS, or after SQS took the batch and before the relay could
// answer (so before Lambda's checkpoint). Lambda then retries the batch;
// here a fresh emulator gets it. Every message reaches the queue (twice
// when the first send went through), each under its outbox id, and the
// kit's SQS adapter on the other side writes one ledger entry per credit.
func TestRelayKilled(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the relay and runs it under the emulator")
	}
	const credits = 5
	cases := []struct {
		name  string
		act   act
		sends int // copies of each message on the queue in the end
	}{
		{"killed before its send", killBefore, 1},
		{"killed after its send, before the checkpoint", killAfter, 2},
	}
	phase := testphase.Start(t, "relay killed", "the relay function killed before and after its SendMessageBatch, a batch of %d credits retried, %d cases", credits, len(cases))
	bin := buildFunctions(t, phase)
	ctx := context.Background()
	srv, err := idemtest.StartSQS(ctx, func(o *idemtest.ServerOptions) { o.Log = io.Discard })
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Stop() })
	plain := sqs.NewFromConfig(aws.Config{Region: "us-east-1", Credentials: idemtest.Client(idemtest.Endpoint(t)).Options().Credentials},
		func(o *sqs.Options) { o.BaseEndpoint = aws.String(srv.Endpoint) })
	passed := 0
	for _, tc := range cases {
		if t.Run(tc.name, func(t *testing.T) {
			tb := newTables(t)
			idemtest.EnableStream(t, tb.client, tb.processed)
			q, err := plain.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(fmt.Sprint("relay-killed-", tc.act))})
			if err != nil {
				t.Fatal(err)
			}
			queueURL := aws.ToString(q.QueueUrl)
			store, err := idem.New(tb.client, tb.processed, func(o *idem.Options) { o.Logger = slog.New(slog.DiscardHandler) })
			if err != nil {
				t.Fatal(err)
			}
			ids := map[string]string{} // outbox id → credit
			for i := range credits {
				id := fmt.Sprint("credit-", i)
				if _, err := store.Process(ctx, idem.Message{ID: id, Source: "credits"}, func(context.Context, idem.Message) (idem.Effect, error) {
					return idem.Effect{Writes: tb.effect(id, "acc-1", 100), Messages: []idem.OutgoingMessage{
						{Destination: queueURL, Type: "credit.applied", Body: fmt.Sprintf(`{"account":"acc-1","cents":100,"id":%q}`, id)},
					}}, nil
				}); err != nil {
					t.Fatal(err)
				}
			}
			for _, m := range idemtest.Outbox(t, tb.client, tb.processed) {
				ids[m.ID] = strings.TrimPrefix(m.ClaimKey, "credits#")
			}
			// The batch as the event source mapping hands it over: the
			// outbox items only, as its filter passes them.
			var recs []events.DynamoDBEventRecord
			for _, r := range idemtest.StreamRecords(t, tb.client, tb.processed) {
				if k, ok := r.Change.NewImage[wire.KindAttr]; ok && k.DataType() == events.DataTypeString && k.String() == wire.Kind {
					recs = append(recs, r)
				}
			}
			event, err := json.Marshal(events.DynamoDBEvent{Records: recs})
			if err != nil || len(recs) != credits {
				t.Fatalf("want %d outbox records, got %d (%v)", credits, len(recs), err)
			}

			px := newProxy(t, srv.Endpoint)
			px.op = ".SendMessageBatch"
			tctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
			defer cancel()
			first := bin.function(t, "relay", idemtest.Endpoint(t), tb, "AWS_ENDPOINT_URL_SQS="+px.url)
			px.arm(tc.act, 0, first.victim)
			out, err := first.Invoke(tctx, event)
			px.waitActed(t)
			firstEnd := ended(out, err)
			if firstEnd == "" {
				t.Fatalf("first invoke: want it ended by the kill, got %s, %v", out, err)
			}
			first.Stop()

			again := bin.function(t, "relay", idemtest.Endpoint(t), tb, "AWS_ENDPOINT_URL_SQS="+px.url)
			out, err = again.Invoke(tctx, event)
			var resp events.DynamoDBEventResponse
			if err != nil || json.Unmarshal(out, &resp) != nil || len(resp.BatchItemFailures) != 0 {
				t.Fatalf("the retried batch: want every record sent, got %s, %v", out, err)
			}

			// The queue holds each message tc.sends times, under its outbox id;
			// the kit's SQS adapter applies each once.
			entries := idemtest.CreateTable(t, tb.client, idemtest.Table{Name: "entries", HashKey: "entry"})
			lstore, err := idem.New(tb.client, tb.processed, func(o *idem.Options) { o.Logger = slog.New(slog.DiscardHandler) })
			if err != nil {
				t.Fatal(err)
			}
			consume, err := sqsconsumer.New(lstore, func(_ context.Context, rec events.SQSMessage) (idem.Effect, error) {
				w, err := idem.Put(entries, map[string]string{"entry": aws.ToString(rec.MessageAttributes["IdempotencyKey"].StringValue), "body": rec.Body})
				return idem.Effect{Writes: []types.TransactWriteItem{w}}, err
			}, func(o *sqsconsumer.Options) { o.Source = "ledger" })
			if err != nil {
				t.Fatal(err)
			}
			seen := map[string]int{}
			for {
				rcv, err := plain.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(queueURL), MaxNumberOfMessages: 10,
					MessageAttributeNames: []string{"All"}, MessageSystemAttributeNames: []sqstypes.MessageSystemAttributeName{"All"}})
				if err != nil {
					t.Fatal(err)
				}
				if len(rcv.Messages) == 0 {
					break
				}
				ev := events.SQSEvent{}
				for _, m := range rcv.Messages {
					rec := idemtest.Received(m, "arn:aws:sqs:us-east-1:123456789012:relay-killed")
					seen[aws.ToString(rec.MessageAttributes["IdempotencyKey"].StringValue)]++
					ev.Records = append(ev.Records, rec)
					if _, err := plain.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(queueURL), ReceiptHandle: m.ReceiptHandle}); err != nil {
						t.Fatal(err)
					}
				}
				if resp, err := consume(ctx, ev); err != nil || len(resp.BatchItemFailures) != 0 {
					t.Fatalf("ledger consumer: %v %v", err, resp.BatchItemFailures)
				}
			}
			for id, credit := range ids {
				if seen[id] != tc.sends {
					t.Errorf("%s: its message %s reached the queue %d times, want %d", credit, id, seen[id], tc.sends)
				}
			}
			if len(seen) != credits {
				t.Errorf("want %d distinct messages on the queue, got %d: %v", credits, len(seen), seen)
			}
			if n := idemtest.ItemCount(t, tb.client, entries); n != credits {
				t.Errorf("want %d ledger entries, one per credit, got %d", credits, n)
			}
			t.Logf("%s: first invoke ended %q; the retry sent every record; %d messages on the queue for %d credits; %d ledger entries",
				tc.name, firstEnd, sum(seen), credits, idemtest.ItemCount(t, tb.client, entries))
		}) {
			passed++
		}
	}
	phase.End("%d of %d cases: every message sent, one ledger entry per credit", passed, len(cases))
}

func sum(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}
