package webhook_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
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

// TestServeMuxScopesKeysByRoute: Receivers at their default Source served
// by an http.ServeMux scope their keys to the route each matched, as a
// Mux's do: one Idempotency-Key and body sent to two routes is two claims,
// each applied once and each redelivery its own route's Duplicate. The
// route is the pattern ("POST /credits"), the request's method before a
// pattern without one, and a Mux's own route when a ServeMux serves a Mux.
// Receivers given Source "webhook", the default before routes scoped a
// ServeMux's keys, share one scope as they did.
func TestServeMuxScopesKeysByRoute(t *testing.T) {
	for _, tc := range []struct {
		name     string
		source   string // the Receivers' Options.Source
		patterns []string
		paths    []string
		want     []string // the Sources the Handlers saw
		credits  int64
	}{
		{"two routes", "", []string{"POST /credits", "POST  /refunds"}, []string{"/credits", "/refunds"},
			[]string{"POST /credits", "POST /refunds"}, 2},
		{"a pattern without a method", "", []string{"POST /credits", "/refunds"}, []string{"/credits", "/refunds"},
			[]string{"POST /credits", "POST /refunds"}, 2},
		{"a Mux behind a ServeMux", "", []string{"POST /credits", "/hooks/"}, []string{"/credits", "/hooks/refunds"},
			[]string{"POST /credits", "POST /hooks/refunds"}, 2},
		{"Source set to the old default: one scope", "webhook", []string{"POST /credits", "POST /refunds"}, []string{"/credits", "/refunds"},
			[]string{"webhook"}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			var sources []string
			mux := http.NewServeMux()
			for i, p := range tc.patterns {
				r, err := webhook.New(e.store, func(ctx context.Context, req webhook.Request) (webhook.Response, idem.Effect, error) {
					if !slices.Contains(sources, req.Source) { // a Duplicate runs the Handler too
						sources = append(sources, req.Source)
					}
					return creditHandler(e.Accounts)(ctx, req)
				}, func(o *webhook.Options) { o.Source = tc.source })
				if err != nil {
					t.Fatal(err)
				}
				var h http.Handler = r
				if strings.HasSuffix(p, "/") {
					h = webhook.Mux{"POST " + tc.paths[i]: r}
				}
				mux.Handle(p, h)
			}
			for round := range 2 {
				for _, path := range tc.paths {
					req := httptest.NewRequest("POST", path, strings.NewReader(creditBody))
					req.Header.Set("Idempotency-Key", "k-1")
					rec := httptest.NewRecorder()
					mux.ServeHTTP(rec, req)
					replayed := rec.Header().Get("Idempotent-Replayed") == "true"
					if rec.Code != 200 || replayed != (round > 0 || len(tc.want) == 1 && path != tc.paths[0]) {
						t.Errorf("round %d, %s: got %d, replayed %v: %s", round, path, rec.Code, replayed, rec.Body)
					}
				}
			}
			if !slices.Equal(sources, tc.want) {
				t.Errorf("want the Handlers run with the Sources %q, got %q", tc.want, sources)
			}
			if got, want := e.Balance(t, "acc-9"), tc.credits*500; got != want {
				t.Errorf("want a balance of %d, got %d", want, got)
			}
		})
	}
}
