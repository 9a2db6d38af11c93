package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/idemkit/kit/idem/idemtest"
	"github.com/idemkit/kit/idem/webhook"
)

func TestRunSignsTheBody(t *testing.T) {
	now := time.Unix(1_750_000_000, 0)
	v2 := `{"version":"2.0","rawPath":"/webhooks/stripe","headers":{"Stripe-Signature":"stale","x-b":"1"},"body":"eyJpZCI6ImV2dF8xIn0=","isBase64Encoded":true}`
	v1 := `{"httpMethod":"POST","headers":{"X-Signature":"stale"},"multiValueHeaders":{"x-signature":["stale"]},"body":"{\"id\":\"evt_1\"}"}`
	for _, tc := range []struct {
		name, event, scheme string
		check               func(t *testing.T, out []byte)
	}{
		{"stripe v2, base64 body", v2, "stripe", func(t *testing.T, out []byte) {
			var e events.APIGatewayV2HTTPRequest
			if err := json.Unmarshal(out, &e); err != nil {
				t.Fatal(err)
			}
			v := &webhook.StripeVerifier{Secrets: []string{"whsec_local_test"}, Now: func() time.Time { return now }}
			if err := v.Verify(e.Headers, []byte(`{"id":"evt_1"}`)); err != nil || len(e.Headers) != 2 || e.Headers["stripe-signature"] == "" {
				t.Fatalf("expect one lower-case, valid stripe-signature, got %v, %v", e.Headers, err)
			}
		}},
		{"hmac v1", v1, "hmac", func(t *testing.T, out []byte) {
			var e events.APIGatewayProxyRequest
			if err := json.Unmarshal(out, &e); err != nil {
				t.Fatal(err)
			}
			want := idemtest.HMACSignature("local-webhook-secret", []byte(`{"id":"evt_1"}`))
			if e.Headers["X-Signature"] != want || len(e.MultiValueHeaders) != 1 || e.MultiValueHeaders["X-Signature"][0] != want {
				t.Fatalf("expect X-Signature %s in both maps, got %v %v", want, e.Headers, e.MultiValueHeaders)
			}
			if !strings.HasPrefix(string(out), "{\n  \"httpMethod\"") {
				t.Errorf("expect the members' order kept, got %s", out)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			if err := run(strings.NewReader(tc.event), &out, tc.scheme, "", now); err != nil {
				t.Fatal(err)
			}
			tc.check(t, out.Bytes())
		})
	}
	if err := run(strings.NewReader(`{"body":"{}"}`), &bytes.Buffer{}, "hmac", "", now); err != nil {
		t.Errorf("no headers: expect them added, got %v", err)
	}
	for _, bad := range []string{`[]`, `{"headers":{},"body":"x","isBase64Encoded":true}`, `{`} {
		if err := run(strings.NewReader(bad), &bytes.Buffer{}, "stripe", "", now); err == nil {
			t.Errorf("%s: expect an error, got nil", bad)
		}
	}
	if err := run(strings.NewReader(v1), &bytes.Buffer{}, "md5", "", now); err == nil {
		t.Error("unknown scheme: expect an error, got nil")
	}
}
