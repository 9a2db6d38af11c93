package idemtest_test

import (
	"testing"
	"time"

	"github.com/idemkit/kit/idem/idemtest"
	"github.com/idemkit/kit/idem/webhook"
)

// TestSignatures checks each helper against a vector computed apart
// (openssl dgst -sha256 -hmac), and against the verifier that checks it.
func TestSignatures(t *testing.T) {
	at := time.Unix(1_750_000_000, 0)
	body := []byte(`{"id":"evt_1"}`)
	for _, tc := range []struct {
		name, got, want string
		verifier        webhook.Verifier
		header          string
	}{
		{"HMAC", idemtest.HMACSignature("test-secret", body),
			"sha256=c0bd8e4de35355b11e7e98d53bb0d0122736ca05c58eb9c138a2dfa24725ac6d",
			&webhook.HMACVerifier{Secrets: []string{"test-secret"}}, "X-Signature"},
		{"Stripe", idemtest.StripeSignature("whsec_x", at, body),
			"t=1750000000,v1=276a36db3f8f0324d0e6f7fb8ae38b48adce4e54d943e8e93dd2655e65658a35",
			&webhook.StripeVerifier{Secrets: []string{"whsec_x"}, Now: func() time.Time { return at.Add(4 * time.Minute) }}, "Stripe-Signature"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.got != tc.want {
				t.Fatalf("expect %s, got %s", tc.want, tc.got)
			}
			if err := tc.verifier.Verify(webhook.Header{tc.header: tc.got}, body); err != nil {
				t.Errorf("expect the verifier to accept it, got %v", err)
			}
		})
	}
}
