package webhook_test

// Fuzz targets for what a stranger controls: the request (body, base64
// flag, headers), each verifier's header, and the key. Run the seeds with
// go test; explore with make fuzz. DynamoDB is answered in-process: these
// test decoding, not the claim.

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemkit/kit/idem"
	"github.com/idemkit/kit/idem/idemtest"
	"github.com/idemkit/kit/idem/webhook"
)

func fuzzReceiver(f *testing.F, opt func(*webhook.Options)) *webhook.Receiver {
	store, err := idem.New(&fakeTx{}, "processed", func(o *idem.Options) {
		o.Logger = slog.New(slog.NewJSONHandler(io.Discard, nil))
	})
	if err != nil {
		f.Fatal(err)
	}
	credit := creditWrite("accounts", "acc-9", 1)
	r, err := webhook.New(store, func(ctx context.Context, req webhook.Request) (webhook.Response, idem.Effect, error) {
		resp, err := webhook.JSON(200, map[string]string{"id": req.Key})
		return resp, idem.Effect{Writes: []types.TransactWriteItem{credit}}, err
	}, opt)
	if err != nil {
		f.Fatal(err)
	}
	return r
}

// FuzzRequest: any request gets one of the documented statuses, a problem
// body when it is refused, and 200 only with a valid key and JSON body.
func FuzzRequest(f *testing.F) {
	for _, s := range []struct {
		body         string
		b64          bool
		key, sig, ct string
	}{
		{creditBody, false, "evt_001", idemtest.HMACSignature(secret, []byte(creditBody)), "application/json"},
		{base64.StdEncoding.EncodeToString([]byte(creditBody)), true, "evt_001", idemtest.HMACSignature(secret, []byte(creditBody)), ""},
		{creditBody, true, "evt_001", "", ""},
		{"{\"a\":\"\xff\"}", false, "k", "sha256=00", ""},
		{creditBody + "{}", false, "\"quoted\\\"key\"", "", ""},
		{"", false, "", "", ""},
		{"null", false, "k\r\nX-Injected: 1", "", ""},
	} {
		f.Add([]byte(s.body), s.b64, s.key, s.sig, s.ct)
	}
	r := fuzzReceiver(f, func(o *webhook.Options) {
		o.Verifier = &webhook.HMACVerifier{Secrets: []string{secret}}
		o.Key = webhook.IdempotencyKey("id")
		o.MaxBodyBytes = 4096
	})
	allowed := map[int]bool{200: true, 400: true, 401: true, 409: true, 413: true, 422: true, 500: true, 503: true}
	f.Fuzz(func(t *testing.T, body []byte, b64 bool, key, sig, ct string) {
		ev := events.APIGatewayV2HTTPRequest{
			RouteKey: "POST /hook", RawPath: "/hook", Body: string(body), IsBase64Encoded: b64,
			Headers: map[string]string{"idempotency-key": key, "x-signature": sig, "content-type": ct},
		}
		ev.RequestContext.HTTP.Method = http.MethodPost
		resp, err := r.HandleV2(context.Background(), ev)
		if err != nil {
			t.Fatalf("HandleV2 returned an error: %v", err)
		}
		if !allowed[resp.StatusCode] {
			t.Fatalf("status %d is not one the receiver documents", resp.StatusCode)
		}
		if resp.StatusCode != 200 && resp.Headers["Content-Type"] != "application/problem+json" {
			t.Fatalf("refusal %d without a problem body: %v", resp.StatusCode, resp.Headers)
		}
	})
}

// FuzzStripeVerifier: no header verifies unless it carries the signature
// of this body, and nothing panics.
func FuzzStripeVerifier(f *testing.F) {
	now := time.Unix(1_780_000_000, 0)
	body := []byte(`{"id":"evt_1"}`)
	f.Add(idemtest.StripeSignature("whsec_a", now, body), body)
	f.Add("t=1780000000,v1=zz,v1=", body)
	f.Add("t=,v1", []byte{})
	f.Add("t=99999999999999999999,v1=00", body)
	f.Add(",,,=,t=1,t=2", body)
	v := &webhook.StripeVerifier{Secrets: []string{"whsec_a"}, Now: func() time.Time { return now }}
	f.Fuzz(func(t *testing.T, header string, body []byte) {
		err := v.Verify(webhook.Header{"stripe-signature": header}, body)
		if err != nil && !errors.Is(err, webhook.ErrSignature) {
			t.Fatalf("error %v does not match ErrSignature", err)
		}
		if err == nil && header != idemtest.StripeSignature("whsec_a", now, body) {
			// Another header may verify only by carrying the same v1 for
			// a timestamp within tolerance: check it holds a valid one.
			if verr := v.Verify(webhook.Header{"stripe-signature": header}, append(body, 'x')); verr == nil {
				t.Fatalf("header %q verifies two different bodies", header)
			}
		}
	})
}

// FuzzHMACVerifier: only the body's own signature verifies.
func FuzzHMACVerifier(f *testing.F) {
	body := []byte(creditBody)
	f.Add(idemtest.HMACSignature(secret, body), body)
	f.Add("sha256=", body)
	f.Add("sha256=zz", []byte{})
	f.Add("SHA256="+idemtest.HMACSignature(secret, body)[7:], body)
	v := &webhook.HMACVerifier{Secrets: []string{secret}, Header: "X-Hub-Signature-256"}
	f.Fuzz(func(t *testing.T, header string, body []byte) {
		err := v.Verify(webhook.Header{"x-hub-signature-256": header}, body)
		if err != nil && !errors.Is(err, webhook.ErrSignature) {
			t.Fatalf("error %v does not match ErrSignature", err)
		}
		// Hex digits may come in either case: the same signature.
		if err == nil && !strings.EqualFold(header, idemtest.HMACSignature(secret, body)) {
			t.Fatalf("header %q verified a body it does not sign", header)
		}
	})
}

// FuzzIdempotencyKey: reading a key or a fingerprint never panics; a
// bare header value (no quotes, no comma, no outer spaces) is the key as
// it is; and, with no header, what the body field fallback returns is the
// field's string, as a map decodes it (the exact name, the last of
// repeated fields), and a body whose field is a string always gives one.
func FuzzIdempotencyKey(f *testing.F) {
	f.Add(`"a\"b"`, []byte(`{"id":"x"}`))
	f.Add(``, []byte(`{"id":7}`))
	f.Add(`"\`, []byte(`[]`))
	f.Add(``, []byte(`{"id":"\u0000"}`))
	f.Add(``, []byte(`{"ID":"a","id":"b","id":"c"}`))
	f.Add(`k-1`, []byte(`{}`))
	key := webhook.IdempotencyKey("id")
	f.Fuzz(func(t *testing.T, header string, body []byte) {
		k, err := key(webhook.Header{"idempotency-key": header}, body)
		_, _ = webhook.StripeEventID(nil, body)
		_, _ = webhook.GitHubDelivery(webhook.Header{"x-github-delivery": header}, body)
		_, _ = webhook.StripeFingerprint(webhook.Request{Body: body})
		if header != "" {
			bare := !strings.ContainsAny(header, "\",") && strings.Trim(header, " \t") == header
			if bare && (err != nil || k != header) {
				t.Fatalf("header %q: want it as the key, got %q, %v", header, k, err)
			}
			return
		}
		// The Receiver reads a key only from a body that is one JSON
		// value in valid UTF-8.
		if !json.Valid(body) || !utf8.Valid(body) {
			return
		}
		var fields map[string]json.RawMessage
		var want *string
		if json.Unmarshal(body, &fields) == nil && fields["id"] != nil {
			var s string
			if json.Unmarshal(fields["id"], &s) == nil {
				want = &s
			}
		}
		switch {
		case want == nil && err == nil:
			t.Fatalf("body %q has no string field \"id\", yet gave the key %q", body, k)
		case want != nil && (err != nil || k != *want):
			t.Fatalf("body %q: want the key %q, got %q, %v", body, *want, k, err)
		}
	})
}
