package idemtest

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"time"
)

// HMACSignature is the header value a sender signs body with under
// secret, "sha256=<hex HMAC-SHA256 of body>": GitHub's
// X-Hub-Signature-256 and the X-Signature that webhook.HMACVerifier
// checks by default. For tests and local tools; written apart from the
// verifier, so a test of one checks the other.
func HMACSignature(secret string, body []byte) string {
	return "sha256=" + hex.EncodeToString(mac(secret, body))
}

// StripeSignature is the Stripe-Signature header value Stripe sends for
// body at t under an endpoint's signing secret (whsec_…),
// "t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<body>">", as stripe-go's
// webhook.GenerateTestSignedPayload signs a test payload. A
// webhook.StripeVerifier accepts it within its tolerance of t. For tests
// and local tools.
func StripeSignature(secret string, t time.Time, body []byte) string {
	ts := strconv.FormatInt(t.Unix(), 10)
	return "t=" + ts + ",v1=" + hex.EncodeToString(mac(secret, []byte(ts+"."), body))
}

// mac is the HMAC-SHA256 of parts, in order, with secret.
func mac(secret string, parts ...[]byte) []byte {
	m := hmac.New(sha256.New, []byte(secret))
	for _, p := range parts {
		m.Write(p)
	}
	return m.Sum(nil)
}
