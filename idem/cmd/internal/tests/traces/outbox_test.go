package traces_test

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"
	ebtypes "github.com/aws/aws-sdk-go-v2/service/eventbridge/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/idemkit/kit/idem/idemtest"
	"github.com/idemkit/kit/idem/internal/wire"
	"github.com/idemkit/kit/idem/outbox"
)

// TestSendSpans: each send is a producer span, a child of the trace its
// committing delivery stored with the item, and carries that trace on:
// an SQS message as its AWSTraceHeader system attribute, an event as
// PutEvents' TraceHeader, which EventBridge hands its targets. An item
// stored untraced begins a trace at its send. (The SQS messages go to the
// local SQS; EventBridge has no local server here: its calls are recorded
// and answered as accepted.)
func TestSendSpans(t *testing.T) {
	const stored = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
	traced := func(r events.DynamoDBEventRecord) events.DynamoDBEventRecord {
		r.Change.NewImage[wire.TraceParentAttr] = events.NewStringAttribute(stored)
		return r
	}
	spans := tracetest.NewSpanRecorder()
	sq, queue := localQueue(t, "ledger")
	eb := &recordedEvents{}
	r, err := outbox.New(func(o *outbox.Options) {
		o.SQS, o.EventBridge = sq, eb
		o.TracerProvider = sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))
	})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := r.Handle(context.Background(), events.DynamoDBEvent{Records: []events.DynamoDBEventRecord{
		traced(outboxRecord(0, queue, "a")), outboxRecord(1, queue, "untraced"), traced(outboxRecord(2, "eventbridge:bus", `{"a":1}`)),
	}})
	if err != nil || len(resp.BatchItemFailures) > 0 {
		t.Fatalf("%v %v", resp, err)
	}
	var under, roots []sdktrace.ReadOnlySpan
	for _, s := range spans.Ended() {
		if s.SpanKind() != trace.SpanKindProducer || !strings.HasPrefix(s.Name(), "send ") {
			t.Errorf("%s: kind %v, want a producer span named send <destination>", s.Name(), s.SpanKind())
		}
		switch {
		case s.Parent().SpanID().String() == "b7ad6b7169203331" && s.SpanContext().TraceID().String() == "0af7651916cd43dd8448eb211c80319c":
			under = append(under, s)
		case !s.Parent().IsValid():
			roots = append(roots, s)
		}
	}
	if len(under) != 2 || len(roots) != 1 || roots[0].Name() != "send ledger" {
		t.Fatalf("want the two traced items' sends under their stored context and the untraced one's a trace of its own, got %d and %d of %d", len(under), len(roots), len(spans.Ended()))
	}
	own := roots[0].SpanContext().TraceID().String()
	var sqsHeaders []string
	got, err := sq.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{QueueUrl: aws.String(queue), MaxNumberOfMessages: 10,
		MessageSystemAttributeNames: []sqstypes.MessageSystemAttributeName{sqstypes.MessageSystemAttributeNameAWSTraceHeader}})
	if err != nil {
		t.Fatal(err)
	}
	byBody := map[string]string{}
	for _, m := range got.Messages {
		byBody[aws.ToString(m.Body)] = m.Attributes["AWSTraceHeader"]
	}
	sqsHeaders = append(sqsHeaders, byBody["a"], byBody["untraced"])
	if len(sqsHeaders) != 2 || !strings.HasPrefix(sqsHeaders[0], "Root=1-0af76519-16cd43dd8448eb211c80319c;Parent=") || !strings.HasPrefix(sqsHeaders[1], "Root=1-"+own[:8]+"-"+own[8:]) {
		t.Errorf("SQS AWSTraceHeaders %q: want the stored trace, then the untraced item's send's own", sqsHeaders)
	}
	if len(eb.inputs) != 1 || !strings.HasPrefix(aws.ToString(eb.inputs[0].Entries[0].TraceHeader), "Root=1-0af76519-16cd43dd8448eb211c80319c;Parent=") {
		t.Errorf("PutEvents TraceHeader: want the stored trace, got %+v", eb.inputs)
	}
}

// localQueue is a queue named name on a local SQS server of the test's
// own, and a client of it.
func localQueue(t *testing.T, name string) (*sqs.Client, string) {
	t.Helper()
	srv, err := idemtest.StartSQS(context.Background(), func(o *idemtest.ServerOptions) { o.Log = io.Discard })
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Stop() })
	sq := sqs.NewFromConfig(aws.Config{Region: "us-east-1", Credentials: credentials.NewStaticCredentialsProvider("test", "test", "")},
		func(o *sqs.Options) { o.BaseEndpoint = aws.String(srv.Endpoint) })
	out, err := sq.CreateQueue(context.Background(), &sqs.CreateQueueInput{QueueName: aws.String(name)})
	if err != nil {
		t.Fatal(err)
	}
	return sq, aws.ToString(out.QueueUrl)
}

// recordedEvents accepts every PutEvents and keeps its input.
type recordedEvents struct {
	mu     sync.Mutex
	inputs []*eventbridge.PutEventsInput
}

func (r *recordedEvents) PutEvents(_ context.Context, in *eventbridge.PutEventsInput, _ ...func(*eventbridge.Options)) (*eventbridge.PutEventsOutput, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.inputs = append(r.inputs, in)
	out := &eventbridge.PutEventsOutput{}
	for range in.Entries {
		out.Entries = append(out.Entries, ebtypes.PutEventsResultEntry{EventId: aws.String(fmt.Sprint("ev-", len(r.inputs)))})
	}
	return out, nil
}

// outboxRecord is a stream record of an outbox item with id n bound for dest.
func outboxRecord(n int, dest, body string) events.DynamoDBEventRecord {
	s := events.NewStringAttribute
	img := map[string]events.DynamoDBAttributeValue{
		"pk": s("#outbox#" + strconv.Itoa(n)), wire.KindAttr: s(wire.Kind), wire.IDAttr: s(fmt.Sprintf("id-%02d", n)),
		wire.DestinationAttr: s(dest), wire.BodyAttr: s(body), wire.TypeAttr: s("credit.applied"),
		wire.GroupAttr: s("src#msg-" + strconv.Itoa(n/3)), wire.CreatedAtAttr: s("2026-12-02T01:02:03Z"),
	}
	return events.DynamoDBEventRecord{EventID: fmt.Sprint("ev-", n), EventName: "INSERT",
		Change: events.DynamoDBStreamRecord{SequenceNumber: fmt.Sprint(1000 + n), NewImage: img}}
}
