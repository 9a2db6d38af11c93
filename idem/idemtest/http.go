package idemtest

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
)

// ServeHTTP is an http.Handler (a webhook.Mux or Receiver, served by
// lambdaurl.Start or a server) as Replay and its kin take a handler: each
// delivery sends a copy of the request, with the delivery's context and
// its body read afresh, through h, and returns the response h wrote, as an
// httptest.ResponseRecorder records it. Build the request with
// http.NewRequest and a strings.Reader, bytes.Reader or bytes.Buffer,
// which let its body be read again; another body is an error.
//
//	req, _ := http.NewRequest("POST", "/webhooks/credits", strings.NewReader(body))
//	req.Header.Set("Idempotency-Key", "evt-1")
//	for _, d := range idemtest.Replay(ctx, 3, idemtest.ServeHTTP(mux), req) {
//		… d.Response.StatusCode, d.Response.Header, d.Response.Body …
//	}
func ServeHTTP(h http.Handler) func(context.Context, *http.Request) (*http.Response, error) {
	return func(ctx context.Context, req *http.Request) (*http.Response, error) {
		r := req.Clone(ctx)
		if req.Body != nil && req.Body != http.NoBody {
			if req.GetBody == nil {
				return nil, errors.New("idemtest: ServeHTTP: the request's body can be read only once; build the request with http.NewRequest and a strings.Reader, bytes.Reader or bytes.Buffer")
			}
			body, err := req.GetBody()
			if err != nil {
				return nil, fmt.Errorf("idemtest: ServeHTTP: the request's body: %w", err)
			}
			r.Body = body
		}
		if r.RequestURI == "" { // as a server sets it
			r.RequestURI = r.URL.RequestURI()
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, r)
		return rec.Result(), nil
	}
}
