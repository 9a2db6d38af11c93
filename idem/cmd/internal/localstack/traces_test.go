package localstack

import (
	"io"
	"net/http"
	"strings"
	"testing"
)

// TestTracesReceiver: OTLP JSON in, traces out for a person to read, and
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
		{"protobuf is refused by name", "application/x-protobuf", "\x0a\x00", http.StatusUnsupportedMediaType},
		{"not JSON", "application/json", "{", http.StatusBadRequest},
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
