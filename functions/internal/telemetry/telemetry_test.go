package telemetry

import (
	"context"
	"encoding/json"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

// TestWanted: the OTEL_* variables decide, as the SDKs read them.
func TestWanted(t *testing.T) {
	for _, tc := range []struct {
		name string
		env  map[string]string
		want bool
	}{
		{"nothing set", nil, false},
		{"an endpoint", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"}, true},
		{"a traces endpoint", map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://127.0.0.1:4318/v1/traces"}, true},
		{"exporter otlp", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://x", "OTEL_TRACES_EXPORTER": "OTLP"}, true},
		{"exporter none", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://x", "OTEL_TRACES_EXPORTER": "none"}, false},
		{"SDK disabled", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://x", "OTEL_SDK_DISABLED": "TRUE"}, false},
		{"grpc asked for: not spoken here", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://x", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}, false},
		{"http/protobuf asked for: JSON to the same port", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://x", "OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, k := range []string{"OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_TRACES_EXPORTER", "OTEL_SDK_DISABLED", "OTEL_EXPORTER_OTLP_PROTOCOL", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"} {
				t.Setenv(k, tc.env[k])
			}
			if got := wanted(); got != tc.want {
				t.Errorf("wanted() = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestStartExports: with an endpoint, Start installs a provider whose
// spans a flush posts as OTLP JSON, with the function's name and the
// headers the environment asks for.
func TestStartExports(t *testing.T) {
	var (
		mu   sync.Mutex
		got  []otlpRequest
		auth []string
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req otlpRequest
		if r.URL.Path != "/v1/traces" || !strings.HasPrefix(r.Header.Get("Content-Type"), "application/json") || json.NewDecoder(r.Body).Decode(&req) != nil {
			http.Error(w, "bad export", http.StatusBadRequest)
			return
		}
		mu.Lock()
		got, auth = append(got, req), append(auth, r.Header.Get("Authorization"))
		mu.Unlock()
	}))
	defer srv.Close()
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", srv.URL)
	t.Setenv("OTEL_EXPORTER_OTLP_HEADERS", "Authorization=Bearer t0ken")
	t.Setenv("AWS_LAMBDA_FUNCTION_NAME", "CreditsFunction")
	t.Cleanup(func() { otel.SetTracerProvider(noop.NewTracerProvider()) })

	flush, err := Start(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	h := Flushing(func(ctx context.Context, _ string) (string, error) {
		ctx, parent := otel.Tracer("t").Start(ctx, "process credits", trace.WithSpanKind(trace.SpanKindConsumer))
		_, child := otel.Tracer("t").Start(ctx, "DynamoDB.TransactWriteItems")
		child.End()
		parent.End()
		return "ok", nil
	}, flush)
	if _, err := h(context.Background(), "event"); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(got) != 1 || auth[0] != "Bearer t0ken" {
		t.Fatalf("want one export with the header, got %d (%q)", len(got), auth)
	}
	b, _ := json.Marshal(got[0])
	for _, want := range []string{`"process credits"`, `"DynamoDB.TransactWriteItems"`, `"CreditsFunction"`, `"parentSpanId"`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("the export lacks %s: %s", want, b)
		}
	}
}

// TestSampling: a child of a trace its caller marked not sampled records
// nothing and carries the mark on; a trace begun here is sampled.
func TestSampling(t *testing.T) {
	p := &provider{exp: &exporter{}}
	tr := p.Tracer("t")
	parent := trace.NewSpanContext(trace.SpanContextConfig{TraceID: trace.TraceID{1}, SpanID: trace.SpanID{2}, Remote: true})
	ctx, s := tr.Start(trace.ContextWithRemoteSpanContext(context.Background(), parent), "child")
	s.End()
	if s.IsRecording() || s.SpanContext().IsSampled() || s.SpanContext().TraceID() != parent.TraceID() || trace.SpanContextFromContext(ctx).SpanID() == parent.SpanID() {
		t.Errorf("a child of an unsampled parent: recording %v, context %v", s.IsRecording(), s.SpanContext())
	}
	_, root := tr.Start(context.Background(), "root")
	root.End()
	if !root.SpanContext().IsSampled() || len(p.ended) != 1 {
		t.Errorf("a root: sampled %v, %d spans kept", root.SpanContext().IsSampled(), len(p.ended))
	}
}

// TestFlushKeepsTheDeadline: a collector that does not answer costs an
// invoke its spans, never its deadline.
func TestFlushKeepsTheDeadline(t *testing.T) {
	stuck := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { <-stuck }))
	defer srv.Close()
	defer close(stuck)
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", srv.URL)
	t.Cleanup(func() { otel.SetTracerProvider(noop.NewTracerProvider()) })
	flush, err := Start(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, left := range []time.Duration{50 * time.Millisecond, 400 * time.Millisecond} {
		_, s := otel.Tracer("t").Start(context.Background(), "x")
		s.End()
		ctx, cancel := context.WithTimeout(context.Background(), left)
		dl, _ := ctx.Deadline()
		flush(ctx)
		if time.Now().After(dl) {
			t.Errorf("flush with %v left returned after the invoke's deadline", left)
		}
		cancel()
	}
}

// TestResource: OTEL_SERVICE_NAME, then OTEL_RESOURCE_ATTRIBUTES'
// service.name, then the function's name; values percent-decoded.
func TestResource(t *testing.T) {
	for _, tc := range []struct {
		name, service, attrs, want string
	}{
		{"the function's name", "", "", "CreditsFunction"},
		{"the attributes' name", "", "service.name=credits%20api,team=pay", "credits api"},
		{"OTEL_SERVICE_NAME first", "credits", "service.name=other", "credits"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("AWS_LAMBDA_FUNCTION_NAME", "CreditsFunction")
			t.Setenv("OTEL_SERVICE_NAME", tc.service)
			t.Setenv("OTEL_RESOURCE_ATTRIBUTES", tc.attrs)
			n := 0
			for _, kv := range resourceAttrs() {
				if kv.Key == "service.name" {
					n++
					if kv.Value.AsString() != tc.want {
						t.Errorf("service.name %q, want %q", kv.Value.AsString(), tc.want)
					}
				}
			}
			if n != 1 {
				t.Errorf("%d service.name attributes", n)
			}
		})
	}
}

// TestNaNExports: an attribute JSON cannot spell does not lose the batch.
func TestNaNExports(t *testing.T) {
	b, err := json.Marshal(request(nil, []finished{{name: "x", attrs: []attribute.KeyValue{attribute.Float64("f", math.NaN())}}}))
	if err != nil || !strings.Contains(string(b), `"NaN"`) {
		t.Errorf("%s %v", b, err)
	}
}
