package telemetry

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/lambdacontext"
	"go.opentelemetry.io/otel"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
	collectortrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

// otelEnv are the variables these tests set, each cleared first.
var otelEnv = []string{"OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_TRACES_EXPORTER", "OTEL_SDK_DISABLED",
	"OTEL_EXPORTER_OTLP_PROTOCOL", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_HEADERS", "OTEL_SERVICE_NAME", "OTEL_RESOURCE_ATTRIBUTES",
	"OTEL_TRACES_SAMPLER", "OTEL_TRACES_SAMPLER_ARG", "OTEL_EXPORTER_OTLP_COMPRESSION", "AWS_LAMBDA_FUNCTION_NAME"}

func setEnv(t *testing.T, env map[string]string) {
	for _, k := range otelEnv {
		t.Setenv(k, env[k])
	}
	t.Cleanup(func() { otel.SetTracerProvider(noop.NewTracerProvider()) })
}

// TestWanted: the OTEL_* variables the SDK leaves to the program decide
// whether anything is installed.
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
		{"grpc asked for: not linked here", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://x", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}, false},
		{"http/json asked for: the exporter's own", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://x", "OTEL_EXPORTER_OTLP_PROTOCOL": "http/json"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			setEnv(t, tc.env)
			if got := wanted(); got != tc.want {
				t.Errorf("wanted() = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestNothingWithoutEndpoint: with no endpoint named Start installs no
// provider and Handler is the handler itself, so an invoke costs nothing.
func TestNothingWithoutEndpoint(t *testing.T) {
	setEnv(t, map[string]string{"OTEL_TRACES_SAMPLER": "always_on"})
	before := otel.GetTracerProvider()
	tp, err := Start(context.Background())
	if err != nil || tp != nil {
		t.Fatalf("Start = %v, %v; want nil, nil", tp, err)
	}
	if otel.GetTracerProvider() != before {
		t.Errorf("Start installed %T", otel.GetTracerProvider())
	}
	h := func(ctx context.Context, e string) (string, error) { return e, nil }
	if got := Handler(tp, h); reflect.ValueOf(got).Pointer() != reflect.ValueOf(h).Pointer() {
		t.Error("Handler wrapped the handler with nothing installed")
	}
}

// collector is an OTLP/HTTP endpoint that decodes each export with
// OpenTelemetry's protobuf types.
type collector struct {
	mu      sync.Mutex
	spans   []*tracepb.Span
	service []string // each span's service.name
	auth    []string
	types   []string // each export's Content-Type
}

func (c *collector) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.types = append(c.types, r.Header.Get("Content-Type"))
	var req collectortrace.ExportTraceServiceRequest
	if r.URL.Path != "/v1/traces" || r.Header.Get("Content-Type") != "application/x-protobuf" || proto.Unmarshal(b, &req) != nil {
		return // counted by its content type alone
	}
	c.auth = append(c.auth, r.Header.Get("Authorization"))
	for _, rs := range req.ResourceSpans {
		for _, ss := range rs.ScopeSpans {
			for _, s := range ss.Spans {
				c.spans = append(c.spans, s)
				c.service = append(c.service, str(rs.Resource.Attributes, "service.name"))
			}
		}
	}
}

func str(kvs []*commonpb.KeyValue, key string) string {
	for _, kv := range kvs {
		if kv.Key == key {
			return kv.Value.GetStringValue()
		}
	}
	return ""
}

func boolAttr(kvs []*commonpb.KeyValue, key string) (v, ok bool) {
	for _, kv := range kvs {
		if kv.Key == key {
			return kv.Value.GetBoolValue(), true
		}
	}
	return false, false
}

// TestHandlerExports: each invoke is a server span with the FaaS
// attributes, the parent of the handler's spans and recording (what the
// kit's rule asks), and its spans reach the collector before it answers.
func TestHandlerExports(t *testing.T) {
	c := &collector{}
	srv := httptest.NewServer(c)
	defer srv.Close()
	setEnv(t, map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": srv.URL, "OTEL_EXPORTER_OTLP_HEADERS": "Authorization=Bearer%20t0ken",
		"AWS_LAMBDA_FUNCTION_NAME": "CreditsFunction"})
	tp, err := Start(context.Background())
	if err != nil || tp == nil {
		t.Fatalf("Start = %v, %v", tp, err)
	}
	defer tp.Shutdown(context.Background())
	var recording []bool
	h := Handler(tp, func(ctx context.Context, _ string) (string, error) {
		recording = append(recording, trace.SpanFromContext(ctx).IsRecording())
		_, s := otel.Tracer("t").Start(ctx, "process credits")
		s.End()
		return "ok", nil
	})
	const arn = "arn:aws:lambda:us-east-1:123456789012:function:CreditsFunction"
	for i, id := range []string{"req-1", "req-2"} {
		ctx := lambdacontext.NewContext(context.Background(), &lambdacontext.LambdaContext{AwsRequestID: id, InvokedFunctionArn: arn})
		if _, err := h(ctx, "event"); err != nil {
			t.Fatal(err)
		}
		c.mu.Lock()
		n := len(c.spans)
		c.mu.Unlock()
		if n != 2*(i+1) { // no waiting: the invoke answered after its flush
			t.Fatalf("after invoke %d the collector has %d spans, want %d", i+1, n, 2*(i+1))
		}
	}
	if !reflect.DeepEqual(recording, []bool{true, true}) {
		t.Errorf("the invoke's span recording in the handler: %v", recording)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.auth[0] != "Bearer t0ken" {
		t.Errorf("Authorization %q, want OTEL_EXPORTER_OTLP_HEADERS'", c.auth[0])
	}
	for i, want := range []struct {
		id   string
		cold bool
	}{{"req-1", true}, {"req-2", false}} {
		child, invoke := c.spans[2*i], c.spans[2*i+1] // ended in that order
		if invoke.Name != "CreditsFunction" || invoke.Kind != tracepb.Span_SPAN_KIND_SERVER || len(invoke.ParentSpanId) != 0 {
			t.Errorf("invoke %d: %q kind %v parent %x, want a root server span named after the function", i+1, invoke.Name, invoke.Kind, invoke.ParentSpanId)
		}
		if got := str(invoke.Attributes, string(semconv.FaaSInvocationIDKey)); got != want.id {
			t.Errorf("invoke %d: faas.invocation_id %q, want %q", i+1, got, want.id)
		}
		if got := str(invoke.Attributes, string(semconv.CloudResourceIDKey)); got != arn {
			t.Errorf("invoke %d: cloud.resource_id %q", i+1, got)
		}
		if cold, ok := boolAttr(invoke.Attributes, string(semconv.FaaSColdstartKey)); !ok || cold != want.cold {
			t.Errorf("invoke %d: faas.coldstart %v (set %v), want %v", i+1, cold, ok, want.cold)
		}
		if child.Name != "process credits" || string(child.ParentSpanId) != string(invoke.SpanId) || string(child.TraceId) != string(invoke.TraceId) {
			t.Errorf("invoke %d: %q is not the invoke's child", i+1, child.Name)
		}
		if c.service[2*i] != "CreditsFunction" {
			t.Errorf("service.name %q, want the function's name", c.service[2*i])
		}
	}
}

// TestProtocol: the exporter reads OTEL_EXPORTER_OTLP_PROTOCOL itself.
func TestProtocol(t *testing.T) {
	for protocol, want := range map[string]string{"": "application/x-protobuf", "http/protobuf": "application/x-protobuf", "http/json": "application/json"} {
		t.Run(protocol, func(t *testing.T) {
			c := &collector{}
			srv := httptest.NewServer(c)
			defer srv.Close()
			setEnv(t, map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": srv.URL, "OTEL_EXPORTER_OTLP_PROTOCOL": protocol})
			tp, err := Start(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			defer tp.Shutdown(context.Background())
			if _, err := Handler(tp, func(context.Context, string) (string, error) { return "", nil })(context.Background(), "event"); err != nil {
				t.Fatal(err)
			}
			c.mu.Lock()
			defer c.mu.Unlock()
			if len(c.types) != 1 || c.types[0] != want {
				t.Errorf("exports sent as %q, want one as %q", c.types, want)
			}
		})
	}
}

// TestSampling: the SDK's sampler, read from OTEL_TRACES_SAMPLER: by
// default parent-based, so a caller's not-sampled trace records nothing
// here; traceidratio at 0 records no invoke, and the handler's span is
// not recording either, so the kit traces nothing.
func TestSampling(t *testing.T) {
	notSampled := trace.ContextWithRemoteSpanContext(context.Background(),
		trace.NewSpanContext(trace.SpanContextConfig{TraceID: trace.TraceID{1}, SpanID: trace.SpanID{2}, Remote: true}))
	for _, tc := range []struct {
		name, sampler, arg string
		ctx                context.Context
		want               int // spans exported
	}{
		{"default: a new trace is sampled", "", "", context.Background(), 1},
		{"default: a caller's not-sampled trace is not", "", "", notSampled, 0},
		{"parentbased_traceidratio 0: no new trace", "parentbased_traceidratio", "0", context.Background(), 0},
		{"always_on: even the caller's not-sampled one", "always_on", "", notSampled, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &collector{}
			srv := httptest.NewServer(c)
			defer srv.Close()
			setEnv(t, map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": srv.URL, "OTEL_TRACES_SAMPLER": tc.sampler, "OTEL_TRACES_SAMPLER_ARG": tc.arg})
			tp, err := Start(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			defer tp.Shutdown(context.Background())
			var recording bool
			h := Handler(tp, func(ctx context.Context, _ string) (string, error) {
				recording = trace.SpanFromContext(ctx).IsRecording()
				return "", nil
			})
			if _, err := h(tc.ctx, "event"); err != nil {
				t.Fatal(err)
			}
			c.mu.Lock()
			defer c.mu.Unlock()
			if len(c.spans) != tc.want || recording != (tc.want == 1) {
				t.Errorf("%d spans exported, recording %v; want %d", len(c.spans), recording, tc.want)
			}
		})
	}
}

// TestFlushKeepsTheDeadline: a collector that does not answer costs an
// invoke its spans, never its deadline.
func TestFlushKeepsTheDeadline(t *testing.T) {
	stuck := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-stuck:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	defer close(stuck)
	setEnv(t, map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": srv.URL})
	tp, err := Start(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	h := Handler(tp, func(context.Context, string) (string, error) { return "ok", nil })
	// Unbounded, the flush would wait for the collector as long as the
	// SDK lets it (seconds); bounded, the invoke answers by its deadline.
	// The slack is the machine's, under load, not the code's.
	const slack = 500 * time.Millisecond
	for _, left := range []time.Duration{50 * time.Millisecond, 400 * time.Millisecond} {
		ctx, cancel := context.WithTimeout(context.Background(), left)
		start := time.Now()
		if got, err := h(ctx, "event"); got != "ok" || err != nil {
			t.Errorf("with %v left: %q, %v", left, got, err)
		}
		if took := time.Since(start); took > left+slack {
			t.Errorf("with %v left the invoke answered after %v, waiting for a collector that does not answer", left, took)
		}
		cancel()
	}
}

// TestResource: OTEL_SERVICE_NAME, then OTEL_RESOURCE_ATTRIBUTES'
// service.name, then the function's name, as the SDK reads them.
func TestResource(t *testing.T) {
	for _, tc := range []struct {
		name, service, attrs, want string
	}{
		{"the function's name", "", "", "CreditsFunction"},
		{"the attributes' name", "", "service.name=credits%20api,team=pay", "credits api"},
		{"OTEL_SERVICE_NAME first", "credits", "service.name=other", "credits"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			setEnv(t, map[string]string{"AWS_LAMBDA_FUNCTION_NAME": "CreditsFunction", "OTEL_SERVICE_NAME": tc.service, "OTEL_RESOURCE_ATTRIBUTES": tc.attrs})
			res, err := newResource(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if got, _ := res.Set().Value(semconv.ServiceNameKey); got.AsString() != tc.want {
				t.Errorf("service.name %q, want %q", got.AsString(), tc.want)
			}
			if got, _ := res.Set().Value(semconv.FaaSNameKey); got.AsString() != "CreditsFunction" {
				t.Errorf("faas.name %q", got.AsString())
			}
		})
	}
}
