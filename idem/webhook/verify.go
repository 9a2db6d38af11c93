package webhook

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// ErrSignature matches every error the kit's verifiers return: the delivery
// is not authenticated.
var ErrSignature = errors.New("webhook: signature not verified")

type signatureError struct{ reason string }

func (e *signatureError) Error() string        { return "webhook: signature not verified: " + e.reason }
func (e *signatureError) Is(target error) bool { return target == ErrSignature }

// unverified builds a verification error. Its text names headers and
// reasons only, never a secret or an expected signature: it is logged and
// sent back in the 401.
func unverified(format string, args ...any) error {
	return &signatureError{reason: fmt.Sprintf(format, args...)}
}

// HMACVerifier checks a "sha256=<hex>" header holding the HMAC-SHA256 of
// the raw body: GitHub's X-Hub-Signature-256, and the kit's generic
// X-Signature. Any of Secrets may match, so a secret can be rotated without
// downtime.
type HMACVerifier struct {
	Secrets []string

	// Header names the signature header. Defaults to "X-Signature".
	Header string
}

// Verify implements Verifier, in constant time per secret.
func (v *HMACVerifier) Verify(h Header, body []byte) error {
	name := v.Header
	if name == "" {
		name = "X-Signature"
	}
	value := h.Get(name)
	if value == "" {
		return unverified("no %s header", name)
	}
	hexSig, ok := strings.CutPrefix(value, "sha256=")
	got, err := hex.DecodeString(hexSig)
	if !ok || err != nil || len(got) != sha256.Size {
		return unverified("%s is not sha256=<64 hex digits>", name)
	}
	if usableSecrets(v.Secrets) != nil {
		return unverified("no usable secret is configured for %s", name)
	}
	for _, secret := range v.Secrets {
		if hmac.Equal(mac(secret, body), got) {
			return nil
		}
	}
	return unverified("%s matches no configured secret", name)
}

// mac is the HMAC-SHA256 of parts, in order, with secret.
func mac(secret string, parts ...[]byte) []byte {
	m := hmac.New(sha256.New, []byte(secret))
	for _, p := range parts {
		m.Write(p)
	}
	return m.Sum(nil)
}

// StripeVerifier checks Stripe's Stripe-Signature header,
// "t=<unix seconds>,v1=<hex>[,v1=<hex>…]", where each v1 is the
// HMAC-SHA256 of "<t>.<raw body>" with an endpoint's signing secret
// (whsec_…). Any v1 may match any of Secrets, so a secret can be rolled;
// other schemes (v0) are ignored. The signed timestamp must lie within
// Tolerance of now, on either side, which bounds how long a captured request
// can be replayed.
type StripeVerifier struct {
	Secrets []string

	// Tolerance is how far the signed timestamp may be from now, either way.
	// Defaults to 5 minutes, stripe-go's default.
	Tolerance time.Duration

	// Now is the clock. Defaults to time.Now.
	Now func() time.Time
}

// Verify implements Verifier, in constant time per signature and secret.
func (v *StripeVerifier) Verify(h Header, body []byte) error {
	value := h.Get("Stripe-Signature")
	if value == "" {
		return unverified("no Stripe-Signature header")
	}
	var ts string
	var sigs [][]byte
	for item := range strings.SplitSeq(value, ",") {
		k, val, _ := strings.Cut(strings.TrimSpace(item), "=")
		switch k {
		case "t":
			ts = val
		case "v1":
			if sig, err := hex.DecodeString(val); err == nil && len(sig) == sha256.Size {
				sigs = append(sigs, sig)
			}
		}
	}
	t, err := strconv.ParseInt(ts, 10, 64)
	if err != nil || ts[0] < '0' || ts[0] > '9' {
		return unverified("Stripe-Signature has no t=<unix seconds>")
	}
	if len(sigs) == 0 {
		return unverified("Stripe-Signature has no v1=<64 hex digits>")
	}
	if usableSecrets(v.Secrets) != nil {
		return unverified("no usable Stripe signing secret is configured")
	}
	if !v.matches(ts, body, sigs) {
		return unverified("no v1 in Stripe-Signature matches a configured secret")
	}
	tolerance, now := v.Tolerance, v.Now
	if tolerance == 0 {
		tolerance = 5 * time.Minute
	}
	if now == nil {
		now = time.Now
	}
	// In whole seconds, as Stripe signs them.
	switch d, tol := now().Unix()-t, int64(tolerance/time.Second); {
	case d > tol:
		return unverified("the Stripe-Signature timestamp is %ds old; the tolerance is %s", d, tolerance)
	case -d > tol:
		return unverified("the Stripe-Signature timestamp is %ds in the future; the tolerance is %s", -d, tolerance)
	}
	return nil
}

func (v *StripeVerifier) matches(ts string, body []byte, sigs [][]byte) bool {
	for _, secret := range v.Secrets {
		want := mac(secret, []byte(ts), []byte("."), body)
		for _, sig := range sigs {
			if hmac.Equal(want, sig) {
				return true
			}
		}
	}
	return false
}

// usableSecrets refuses an empty list and an empty secret: an HMAC under an
// empty key is one anybody can compute.
func usableSecrets(secrets []string) error {
	if len(secrets) == 0 {
		return errors.New("no secret is configured")
	}
	for i, s := range secrets {
		if s == "" {
			return fmt.Errorf("secret %d of %d is empty", i+1, len(secrets))
		}
	}
	return nil
}

// checkSecrets fails a Receiver's construction when one of the kit's
// verifiers has no usable secret, so the mistake stops the function at
// start-up instead of refusing every delivery.
func checkSecrets(v Verifier) error {
	var secrets []string
	switch v := v.(type) {
	case *HMACVerifier:
		if v == nil {
			return errors.New("verifier: a nil *HMACVerifier")
		}
		secrets = v.Secrets
	case *StripeVerifier:
		if v == nil {
			return errors.New("verifier: a nil *StripeVerifier")
		}
		secrets = v.Secrets
	default:
		return nil
	}
	if err := usableSecrets(secrets); err != nil {
		return fmt.Errorf("verifier: %w", err)
	}
	return nil
}
