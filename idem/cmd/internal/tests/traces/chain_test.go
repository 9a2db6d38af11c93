package traces_test

import (
	"strings"

	"context"
	"fmt"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	"io"
	"log/slog"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/idemkit/kit/idem"
	"github.com/idemkit/kit/idem/idemtest"
	"github.com/idemkit/kit/idem/outbox"
	"github.com/idemkit/kit/idem/sqsconsumer"
)

// TestChain: credits applied with an outgoing message each, their outbox
// items read from the local table's stream as Lambda hands them over,
// relayed twice (a stream batch retried) to a standard and a FIFO queue on
// the local SQS, and consumed by the kit: one ledger entry per credit.
func TestChain(t *testing.T) {
	ctx := context.Background()
	te := idemtest.NewEnv(t)
	idemtest.EnableStream(t, te.Client, te.Processed)
	srv, err := idemtest.StartSQS(ctx, func(o *idemtest.ServerOptions) { o.Log = io.Discard })
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Stop() })
	sq := sqs.NewFromConfig(aws.Config{Region: "us-east-1", Credentials: te.Client.Options().Credentials}, func(o *sqs.Options) { o.BaseEndpoint = aws.String(srv.Endpoint) })
	queues := map[bool]string{}
	for _, fifo := range []bool{false, true} {
		in := &sqs.CreateQueueInput{QueueName: aws.String("ledger")}
		if fifo {
			in.QueueName, in.Attributes = aws.String("ledger.fifo"), map[string]string{"FifoQueue": "true"}
		}
		out, err := sq.CreateQueue(ctx, in)
		if err != nil {
			t.Fatal(err)
		}
		queues[fifo] = aws.ToString(out.QueueUrl)
	}

	// 12 credits, each delivered twice, each announcing itself once.
	// One TracerProvider for the three hops, as one collector sees them.
	spans := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))
	quiet := func(o *idem.Options) { o.Logger, o.TracerProvider = slog.New(slog.DiscardHandler), tp }
	store, err := idem.New(te.Client, te.Processed, quiet)
	if err != nil {
		t.Fatal(err)
	}
	const credits = 12
	for n := range credits {
		for range 2 {
			_, err := store.Process(ctx, idem.Message{ID: fmt.Sprint("c-", n), Source: "credits"}, func(context.Context, idem.Message) (idem.Effect, error) {
				w, err := idem.Update(te.Accounts, map[string]string{"account": "acc-1"}, expression.Add(expression.Name("balance"), expression.Value(n)))
				return idem.Effect{Writes: []types.TransactWriteItem{w}, Messages: []idem.OutgoingMessage{{
					Destination: queues[n%3 == 0], Type: "credit.applied", Body: fmt.Sprintf(`{"account":"acc-1","cents":%d}`, n),
				}}}, err
			})
			if err != nil {
				t.Fatal(err)
			}
		}
	}

	ids := map[string]string{} // claim key → its message's outbox id
	for _, m := range idemtest.Outbox(t, te.Client, te.Processed) {
		ids[m.ClaimKey] = m.ID
	}
	records := idemtest.StreamRecords(t, te.Client, te.Processed)
	relay, err := outbox.New(func(o *outbox.Options) { o.SQS, o.TracerProvider = sq, tp })
	if err != nil {
		t.Fatal(err)
	}
	for range 2 { // the batch, and Lambda's retry of it after a lost checkpoint
		resp, err := relay.Handle(ctx, events.DynamoDBEvent{Records: records})
		if err != nil || len(resp.BatchItemFailures) != 0 {
			t.Fatalf("relay: %v, failures %v", err, resp.BatchItemFailures)
		}
	}

	// The ledger's consumer: the kit's SQS adapter, keyed by IdempotencyKey.
	ledger := idemtest.CreateTable(t, te.Client, idemtest.Table{Name: "ledger", HashKey: "entry"})
	lstore, err := idem.New(te.Client, te.Processed, quiet)
	if err != nil {
		t.Fatal(err)
	}
	consume, err := sqsconsumer.New(lstore, func(_ context.Context, rec events.SQSMessage) (idem.Effect, error) {
		w, err := idem.Put(ledger, map[string]string{"entry": aws.ToString(rec.MessageAttributes["IdempotencyKey"].StringValue), "body": rec.Body})
		return idem.Effect{Writes: []types.TransactWriteItem{w}}, err
	}, func(o *sqsconsumer.Options) { o.Source = "ledger" })
	if err != nil {
		t.Fatal(err)
	}
	received := map[string]int{}
	for fifo, url := range queues {
		for {
			out, err := sq.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), MaxNumberOfMessages: 10,
				MessageAttributeNames: []string{"All"}, MessageSystemAttributeNames: []sqstypes.MessageSystemAttributeName{"All"}})
			if err != nil {
				t.Fatal(err)
			}
			if len(out.Messages) == 0 {
				break
			}
			var ev events.SQSEvent
			for _, m := range out.Messages {
				key := aws.ToString(m.MessageAttributes["IdempotencyKey"].StringValue)
				received[key]++
				if fifo && (m.Attributes["MessageDeduplicationId"] != key || m.Attributes["MessageGroupId"] == "") {
					t.Errorf("FIFO message %s: deduplication id %q, group %q", key, m.Attributes["MessageDeduplicationId"], m.Attributes["MessageGroupId"])
				}
				ev.Records = append(ev.Records, idemtest.Received(m, "arn:aws:sqs:us-east-1:123456789012:"+map[bool]string{false: "ledger", true: "ledger.fifo"}[fifo]))
				if _, err := sq.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(url), ReceiptHandle: m.ReceiptHandle}); err != nil {
					t.Fatal(err)
				}
			}
			resp, err := consume(ctx, ev)
			if err != nil || len(resp.BatchItemFailures) != 0 {
				t.Fatalf("ledger consumer: %v, failures %v", err, resp.BatchItemFailures)
			}
		}
	}
	for n := range credits {
		id := ids[fmt.Sprint("credits#c-", n)]
		want := 2 // relayed twice to a standard queue
		if n%3 == 0 {
			want = 1 // a FIFO queue deduplicates the second send
		}
		if received[id] != want {
			t.Errorf("credit %d: its message %s was received %d times, want %d", n, id, received[id], want)
		}
	}
	checkTraces(t, spans.Ended(), credits)
	if got := idemtest.ItemCount(t, te.Client, ledger); got != credits {
		t.Errorf("want %d ledger entries, one per credit, got %d", credits, got)
	}
	if got := te.Balance(t, "acc-1"); got != 66 {
		t.Errorf("balance %d, want 66 (0 + 1 + … + 11)", got)
	}
}

// checkTraces: each credit's trace runs from its delivery (process
// credits) through its commit and the relay's send to the ledger's
// delivery of its message: one trace id, each span the next one's parent.
func checkTraces(t *testing.T, ended []sdktrace.ReadOnlySpan, credits int) {
	t.Helper()
	byID := map[trace.SpanID]sdktrace.ReadOnlySpan{}
	for _, s := range ended {
		byID[s.SpanContext().SpanID()] = s
	}
	chains := 0
	for _, s := range ended {
		if !strings.HasPrefix(s.Name(), "process ledger") || outcome(s) != "Processed" {
			continue
		}
		send, ok := byID[s.Parent().SpanID()]
		if !ok || !strings.HasPrefix(send.Name(), "send ledger") {
			t.Errorf("%s: want a send span as its parent, got %v", s.Name(), s.Parent())
			continue
		}
		delivery, ok := byID[send.Parent().SpanID()]
		if !ok || delivery.Name() != "process credits" || outcome(delivery) != "Processed" || delivery.SpanContext().TraceID() != s.SpanContext().TraceID() {
			t.Errorf("%s: want its send's parent the credit's delivery, in one trace", s.Name())
			continue
		}
		if chains == 0 {
			t.Logf("one credit's trace %s: %s → %s → %s", s.SpanContext().TraceID(), delivery.Name(), send.Name(), s.Name())
		}
		chains++
	}
	if chains != credits {
		t.Errorf("want %d traces from delivery to ledger, got %d", credits, chains)
	}
}

func outcome(s sdktrace.ReadOnlySpan) string {
	for _, kv := range s.Attributes() {
		if kv.Key == "idem.outcome" {
			return kv.Value.AsString()
		}
	}
	return ""
}
