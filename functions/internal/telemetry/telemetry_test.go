package telemetry

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"go.opentelemetry.io/otel"
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
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, k := range []string{"OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_TRACES_EXPORTER", "OTEL_SDK_DISABLED"} {
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
