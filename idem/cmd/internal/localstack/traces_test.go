package localstack

import (
	"context"
	"io"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// TestTracesReceiver: an OTLP JSON export written by hand (ids in hex, as
// OTLP's JSON encoding has them) in, traces out for a person to read, and
// a clear answer to what it cannot take.
func TestTracesReceiver(t *testing.T) {
	tr, err := StartTraces("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Stop()
	const export = `{"resourceSpans":[
	 {"resource":{"attributes":[{"key":"service.name","value":{"stringValue":"WebhookFunction"}}]},
	  "scopeSpans":[{"spans":[
	   {"traceId":"0af7651916cd43dd8448eb211c80319c","spanId":"b7ad6b7169203331","name":"POST /webhooks/credits","kind":2,
	    "startTimeUnixNano":"1000000000","endTimeUnixNano":"1050000000",
	    "attributes":[{"key":"idem.outcome","value":{"stringValue":"Processed"}},{"key":"idem.attempts","value":{"intValue":"1"}}]},
	   {"traceId":"0af7651916cd43dd8448eb211c80319c","spanId":"c7ad6b7169203331","parentSpanId":"b7ad6b7169203331","name":"DynamoDB.TransactWriteItems","kind":3,
	    "startTimeUnixNano":"1010000000","endTimeUnixNano":"1040000000","status":{"code":2,"message":"TransactionCanceledException"}}]}]},
	 {"resource":{"attributes":[{"key":"service.name","value":{"stringValue":"RelayFunction"}}]},
	  "scopeSpans":[{"spans":[
	   {"traceId":"0af7651916cd43dd8448eb211c80319c","spanId":"d7ad6b7169203331","parentSpanId":"b7ad6b7169203331","name":"send ledger","kind":4,
	    "startTimeUnixNano":"1100000000","endTimeUnixNano":"1110000000"}]}]}]}`
	post := func(ct, body string) int {
		resp, err := http.Post(tr.URL+"/v1/traces", ct, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	get := func(path string) (int, string) {
		resp, err := http.Get(tr.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	for _, tc := range []struct {
		name, ct, body string
		want           int
	}{
		{"neither encoding is refused by name", "text/plain", "{}", http.StatusUnsupportedMediaType},
		{"not JSON", "application/json", "{", http.StatusBadRequest},
		{"not protobuf", "application/x-protobuf", "\x0a\x05", http.StatusBadRequest},
		{"an export", "application/json", export, http.StatusOK},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := post(tc.ct, tc.body); got != tc.want {
				t.Errorf("status %d, want %d", got, tc.want)
			}
		})
	}
	if n := len(tr.Spans()); n != 3 {
		t.Fatalf("%d spans kept, want 3", n)
	}
	code, list := get("/traces")
	if code != 200 || !strings.Contains(list, "0af7651916cd43dd8448eb211c80319c") || !strings.Contains(list, "WebhookFunction → RelayFunction") || !strings.Contains(list, "Processed×1") {
		t.Errorf("GET /traces: %d %q", code, list)
	}
	code, tree := get("/traces/0af7651916cd43dd8448eb211c80319c")
	want := []string{"  POST /webhooks/credits", "    DynamoDB.TransactWriteItems", "error: TransactionCanceledException", "    send ledger", "outcome=Processed attempts=1"}
	for _, w := range want {
		if code != 200 || !strings.Contains(tree, w) {
			t.Errorf("GET /traces/<id> lacks %q: %d\n%s", w, code, tree)
		}
	}
	if code, body := get("/traces/ffff"); code != http.StatusNotFound || !strings.Contains(body, "GET /traces lists them") {
		t.Errorf("an unknown trace: %d %q", code, body)
	}
	if w := tr.Widest(); len(Services(w)) != 2 {
		t.Errorf("Widest crosses %v, want two functions", Services(w))
	}
}

// TestTracesFromTheSDK: what OpenTelemetry's OTLP/HTTP exporter sends, in
// each of its encodings, gzipped or not, arrives whole: names, ids,
// parents, kinds, the resource's service, attributes and status.
func TestTracesFromTheSDK(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts []otlptracehttp.Option
	}{
		{"protobuf", nil},
		{"JSON", []otlptracehttp.Option{otlptracehttp.WithEncoding(otlptracehttp.EncodingJSON)}},
		{"gzipped protobuf", []otlptracehttp.Option{otlptracehttp.WithCompression(otlptracehttp.GzipCompression)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr, err := StartTraces("127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			defer tr.Stop()
			ctx := context.Background()
			exp, err := otlptracehttp.New(ctx, append([]otlptracehttp.Option{otlptracehttp.WithEndpointURL(tr.URL + "/v1/traces")}, tc.opts...)...)
			if err != nil {
				t.Fatal(err)
			}
			tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp),
				sdktrace.WithResource(resource.NewSchemaless(attribute.String("service.name", "QueueFunction"))))
			defer tp.Shutdown(ctx)
			ctx, invoke := tp.Tracer("t").Start(ctx, "QueueFunction", trace.WithSpanKind(trace.SpanKindServer))
			_, call := tp.Tracer("t").Start(ctx, "DynamoDB.TransactWriteItems", trace.WithSpanKind(trace.SpanKindClient),
				trace.WithAttributes(attribute.Int("idem.attempts", 2), attribute.Bool("idem.cached", false), attribute.StringSlice("aws.dynamodb.table_names", []string{"a", "b"})))
			call.SetStatus(codes.Error, "TransactionCanceledException")
			call.End()
			invoke.End()
			spans := tr.Spans()
			if len(spans) != 2 {
				t.Fatalf("%d spans received, want 2", len(spans))
			}
			got, want := spans[0], Span{TraceID: call.SpanContext().TraceID().String(), SpanID: call.SpanContext().SpanID().String(),
				ParentID: invoke.SpanContext().SpanID().String(), Name: "DynamoDB.TransactWriteItems", Service: "QueueFunction", Kind: int(trace.SpanKindClient),
				Attrs: map[string]string{"idem.attempts": "2", "idem.cached": "false", "aws.dynamodb.table_names": "[a,b]"}, Error: "error: TransactionCanceledException"}
			got.Start, got.End = time.Time{}, time.Time{}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("received\n%+v\nwant\n%+v", got, want)
			}
			if root := spans[1]; root.ParentID != "" || root.Kind != int(trace.SpanKindServer) || root.End.Before(root.Start) || root.Start.IsZero() {
				t.Errorf("the invoke's span: %+v", root)
			}
		})
	}
}
