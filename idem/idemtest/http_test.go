package idemtest_test

import (
	"context"
	"encoding/base64"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/idemkit/kit/idem/idemtest"
)

// TestServeHTTP: each delivery reads the request's body afresh and runs
// under the delivery's context; a body that can be read only once is an
// error that says how to build the request.
func TestServeHTTP(t *testing.T) {
	type ctxKey struct{}
	echo := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		w.Header().Set("X-Value", r.Context().Value(ctxKey{}).(string))
		w.Write(b)
	})
	req, err := http.NewRequest("POST", "/hook", strings.NewReader(`{"a":1}`))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.WithValue(context.Background(), ctxKey{}, "v")
	for i, d := range idemtest.Replay(ctx, 3, idemtest.ServeHTTP(echo), req) {
		b, _ := io.ReadAll(d.Response.Body)
		if d.Err != nil || string(b) != `{"a":1}` || d.Response.Header.Get("X-Value") != "v" {
			t.Errorf("delivery %d: want the body and the context's value, got %q %v %v", i, b, d.Response.Header, d.Err)
		}
	}
	once := httptest.NewRequest("POST", "/hook", strings.NewReader(`{}`))
	if d := idemtest.Replay(ctx, 1, idemtest.ServeHTTP(echo), once)[0]; d.Err == nil || !strings.Contains(d.Err.Error(), "http.NewRequest") {
		t.Errorf("want an error naming http.NewRequest, got %v", d.Err)
	}
}

// TestALBRequest: the body is base64-encoded as the load balancer encodes
// it, and ALBMultiValue moves every header into multiValueHeaders.
func TestALBRequest(t *testing.T) {
	for _, tc := range []struct {
		headers map[string]string
		encoded bool
	}{
		{map[string]string{"Content-Type": "application/json"}, false},
		{map[string]string{"content-type": "Application/JSON; charset=utf-8"}, false},
		{map[string]string{"Content-Type": "text/plain"}, false},
		{map[string]string{"Content-Type": "application/xml"}, false},
		{map[string]string{"Content-Type": "application/json", "Content-Encoding": "gzip"}, true},
		{map[string]string{"Content-Type": "application/octet-stream"}, true},
		{nil, true},
	} {
		e := idemtest.ALBRequest("POST", "/hook", `{"a":1}`, tc.headers)
		want := `{"a":1}`
		if tc.encoded {
			want = base64.StdEncoding.EncodeToString([]byte(want))
		}
		if e.IsBase64Encoded != tc.encoded || e.Body != want {
			t.Errorf("%v: want base64 %v, got %v %q", tc.headers, tc.encoded, e.IsBase64Encoded, e.Body)
		}
	}
	m := idemtest.ALBMultiValue(idemtest.ALBRequest("POST", "/hook", "", map[string]string{"Idempotency-Key": "k"}))
	if m.Headers != nil || len(m.MultiValueHeaders["idempotency-key"]) != 1 || m.MultiValueHeaders["idempotency-key"][0] != "k" {
		t.Errorf("want the header in multiValueHeaders only, got %v and %v", m.Headers, m.MultiValueHeaders)
	}
}
