package outbox_test

import (
	"context"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/idemkit/kit/idem/internal/wire"
	"github.com/idemkit/kit/idem/outbox"
)

// TestSendSpans: each send is a producer span, a child of the trace its
// committing delivery stored with the item, and carries that trace on:
// an SQS message as its AWSTraceHeader system attribute, an event as
// PutEvents' TraceHeader, which EventBridge hands its targets. An item
// stored untraced begins a trace at its send. (EventBridge has no local
// server here: its answers are scripted.)
func TestSendSpans(t *testing.T) {
	const stored = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
	traced := func(r events.DynamoDBEventRecord) events.DynamoDBEventRecord {
		r.Change.NewImage[wire.TraceParentAttr] = events.NewStringAttribute(stored)
		return r
	}
	spans := tracetest.NewSpanRecorder()
	sq, eb := &fakeSQS{script: newScript()}, &fakeEvents{script: newScript()}
	r, err := outbox.New(func(o *outbox.Options) {
		o.SQS, o.EventBridge = sq, eb
		o.TracerProvider = sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))
	})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := r.Handle(context.Background(), events.DynamoDBEvent{Records: []events.DynamoDBEventRecord{
		traced(record(0, queue, "a")), record(1, queue, "untraced"), traced(record(2, "eventbridge:bus", `{"a":1}`)),
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
	for _, in := range sq.inputs {
		for _, e := range in.Entries {
			sqsHeaders = append(sqsHeaders, aws.ToString(e.MessageSystemAttributes["AWSTraceHeader"].StringValue))
		}
	}
	if len(sqsHeaders) != 2 || !strings.HasPrefix(sqsHeaders[0], "Root=1-0af76519-16cd43dd8448eb211c80319c;Parent=") || !strings.HasPrefix(sqsHeaders[1], "Root=1-"+own[:8]+"-"+own[8:]) {
		t.Errorf("SQS AWSTraceHeaders %q: want the stored trace, then the untraced item's send's own", sqsHeaders)
	}
	if len(eb.inputs) != 1 || !strings.HasPrefix(aws.ToString(eb.inputs[0].Entries[0].TraceHeader), "Root=1-0af76519-16cd43dd8448eb211c80319c;Parent=") {
		t.Errorf("PutEvents TraceHeader: want the stored trace, got %+v", eb.inputs)
	}
}
