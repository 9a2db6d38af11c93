package webhook_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/idemkit/kit/idem"
	"github.com/idemkit/kit/idem/webhook"
)

// TestServeHTTPOverTheWire serves a Mux from a real server, as on ECS or
// behind the Lambda Web Adapter: a body past MaxBodyBytes is refused with
// the 413 of every entry, with or without a Content-Length (read through
// http.MaxBytesReader); a key sent in two headers is refused as API
// Gateway's joined value is; an unknown route or method is a 404; the
// route is the Source, as for every Mux.
func TestServeHTTPOverTheWire(t *testing.T) {
	e := newEnv(t)
	var sources []string
	r, err := webhook.New(e.store, func(ctx context.Context, req webhook.Request) (webhook.Response, idem.Effect, error) {
		sources = append(sources, req.Source+" "+req.Header.Get("Host"))
		return creditHandler(e.Accounts)(ctx, req)
	}, func(o *webhook.Options) { o.MaxBodyBytes = 1 << 10 })
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(webhook.Mux{"POST /webhooks/credits": r})
	defer srv.Close()
	big := `{"account":"acc-9","cents":1,"pad":"` + strings.Repeat("x", 2<<10) + `"}`
	for _, tc := range []struct {
		name    string
		method  string
		path    string
		body    io.Reader
		keys    []string
		status  int
		detail  string
		chunked bool
	}{
		{"first", "POST", "/webhooks/credits", strings.NewReader(creditBody), []string{"k-1"}, 200, "", false},
		{"replayed", "POST", "/webhooks/credits", strings.NewReader(creditBody), []string{"k-1"}, 200, "", false},
		{"oversize", "POST", "/webhooks/credits", strings.NewReader(big), []string{"k-2"}, 413, "the body is larger than 1024 bytes", false},
		{"oversize, no Content-Length", "POST", "/webhooks/credits", io.MultiReader(strings.NewReader(big)), []string{"k-2"}, 413, "the body is larger than 1024 bytes", true},
		{"a key in two headers", "POST", "/webhooks/credits", strings.NewReader(creditBody), []string{"k-3", "k-4"}, 400, "more than one value", false},
		{"unknown route", "POST", "/webhooks/other", strings.NewReader(creditBody), []string{"k-5"}, 404, "POST /webhooks/other", false},
		{"escaped path", "POST", "/webhooks/cred%69ts", strings.NewReader(creditBody), []string{"k-5"}, 404, "POST /webhooks/cred%69ts", false},
		{"another method", "PUT", "/webhooks/credits", strings.NewReader(creditBody), []string{"k-5"}, 404, "PUT /webhooks/credits", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, err := http.NewRequest(tc.method, srv.URL+tc.path, tc.body)
			if err != nil {
				t.Fatal(err)
			}
			for _, k := range tc.keys {
				req.Header.Add("Idempotency-Key", k)
			}
			if unknown := req.ContentLength == 0; unknown != tc.chunked { // sent chunked
				t.Fatalf("want the length unknown %v, got %d", tc.chunked, req.ContentLength)
			}
			resp, err := srv.Client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			a := httpAnswer(t, resp)
			if a.status != tc.status {
				t.Fatalf("want %d, got %d %s", tc.status, a.status, a.body)
			}
			if tc.detail != "" && !strings.Contains(problemDetail(t, a), tc.detail) {
				t.Errorf("want the detail to say %q, got %s", tc.detail, a.body)
			}
		})
	}
	host := strings.TrimPrefix(srv.URL, "http://")
	// The replay is a redelivery to the environment that settled it: its
	// read of the claim answers it before the Handler would run.
	if want := "POST /webhooks/credits " + host; len(sources) != 1 || sources[0] != want {
		t.Errorf("want the Handler run once with Source and Host %q, got %q", want, sources)
	}
	if b := e.Balance(t, "acc-9"); b != 500 {
		t.Errorf("want one credit of 500, got %d", b)
	}
}
