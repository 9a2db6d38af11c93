package webhook_test

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/idemkit/kit/idem"
	"github.com/idemkit/kit/idem/webhook"
)

// hmacHex is computed here, independently of the package.
func hmacHex(secret, msg string) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte(msg))
	return hex.EncodeToString(m.Sum(nil))
}

func TestGitHubVerifier(t *testing.T) {
	const ghSecret = "It's a Secret to Everybody"
	body := `{"action":"opened","number":1,"repository":{"full_name":"octo/hello"}}`
	sig := "sha256=" + hmacHex(ghSecret, body)
	var o webhook.Options
	webhook.GitHub("rotated-away", ghSecret)(&o)
	for _, tc := range []struct {
		name   string
		header map[string]string
		body   string
		err    string
	}{
		{"valid", map[string]string{"X-Hub-Signature-256": sig}, body, ""},
		{"lower-case header", map[string]string{"x-hub-signature-256": sig}, body, ""},
		{"upper-case hex", map[string]string{"X-Hub-Signature-256": "sha256=" + strings.ToUpper(sig[7:])}, body, ""},
		{"missing", map[string]string{"X-Hub-Signature": "sha1=abc"}, body, "no X-Hub-Signature-256 header"},
		{"tampered body", map[string]string{"X-Hub-Signature-256": sig}, body + " ", "matches no configured secret"},
		{"wrong scheme", map[string]string{"X-Hub-Signature-256": "sha1=" + sig[7:]}, body, "not sha256=<64 hex digits>"},
		{"short", map[string]string{"X-Hub-Signature-256": sig[:20]}, body, "not sha256=<64 hex digits>"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := o.Verifier.Verify(tc.header, []byte(tc.body))
			if tc.err == "" {
				if err != nil {
					t.Fatalf("expect nil, got %v", err)
				}
				return
			}
			if !errors.Is(err, webhook.ErrSignature) || !strings.Contains(err.Error(), tc.err) {
				t.Fatalf("expect a signature error saying %q, got %v", tc.err, err)
			}
		})
	}
	if o.Source != "github" {
		t.Errorf("expect Source github, got %q", o.Source)
	}
	if k, err := o.Key(webhook.Header{"x-github-delivery": "72d3162e-cc78-11e3-81ab-4c9367dc0958"}, []byte(body)); err != nil || k != "72d3162e-cc78-11e3-81ab-4c9367dc0958" {
		t.Errorf("expect the delivery GUID as key, got %q, %v", k, err)
	}
}

func TestHMACVerifierWithoutSecretsRefusesAll(t *testing.T) {
	v := &webhook.HMACVerifier{}
	body := []byte(`{}`)
	if err := v.Verify(webhook.Header{"X-Signature": "sha256=" + hmacHex("", "{}")}, body); !errors.Is(err, webhook.ErrSignature) {
		t.Fatalf("expect a signature error, got %v", err)
	}
}

func TestStripeVerifier(t *testing.T) {
	now := time.Unix(1_750_000_000, 0)
	body := `{"id":"evt_1","type":"payment_intent.succeeded"}`
	at := func(ts int64, secret string) string {
		return fmt.Sprintf("t=%d,v1=%s", ts, hmacHex(secret, fmt.Sprintf("%d.%s", ts, body)))
	}
	v := &webhook.StripeVerifier{Secrets: []string{"whsec_old", "whsec_new"}, Now: func() time.Time { return now }}
	n := now.Unix()
	for _, tc := range []struct {
		name   string
		header string
		err    string
	}{
		{"valid", at(n, "whsec_old"), ""},
		{"second secret (rotation)", at(n, "whsec_new"), ""},
		{"one of several v1", fmt.Sprintf("t=%d,v1=%s,v1=%s,v0=abc", n, strings.Repeat("0", 64), at(n, "whsec_new")[len(fmt.Sprint(n))+6:]), ""},
		{"spaces after commas", strings.ReplaceAll(at(n, "whsec_old"), ",", ", "), ""},
		{"300 s old", at(n-300, "whsec_old"), ""},
		{"300 s ahead", at(n+300, "whsec_old"), ""},
		{"301 s old", at(n-301, "whsec_old"), "301s old"},
		{"301 s ahead", at(n+301, "whsec_old"), "301s in the future"},
		{"a day old", at(n-86400, "whsec_old"), "old"},
		{"unknown secret", at(n, "whsec_other"), "no v1"},
		{"timestamp changed", strings.Replace(at(n, "whsec_old"), fmt.Sprint(n), fmt.Sprint(n-1), 1), "no v1"},
		{"no timestamp", "v1=" + hmacHex("whsec_old", body), "no t="},
		{"negative timestamp", fmt.Sprintf("t=-1,v1=%s", strings.Repeat("0", 64)), "no t="},
		{"no v1", fmt.Sprintf("t=%d,v0=%s", n, hmacHex("whsec_old", body)), "no v1="},
		{"empty", "", "no Stripe-Signature header"},
		{"garbage", ",,=,t,v1", "no t="},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := webhook.Header{}
			if tc.header != "" {
				h["stripe-signature"] = tc.header
			}
			err := v.Verify(h, []byte(body))
			if tc.err == "" {
				if err != nil {
					t.Fatalf("expect nil, got %v", err)
				}
				return
			}
			if !errors.Is(err, webhook.ErrSignature) || !strings.Contains(err.Error(), tc.err) {
				t.Fatalf("expect a signature error saying %q, got %v", tc.err, err)
			}
			for _, s := range v.Secrets {
				if strings.Contains(err.Error(), s) {
					t.Fatalf("the error reveals a secret: %v", err)
				}
			}
		})
	}
}

func TestGitHubDeliveryKey(t *testing.T) {
	for _, tc := range []struct {
		name, header, want, err string
	}{
		{"one delivery id", "72d3162e-cc78-11e3-81ab-4c9367dc0958", "72d3162e-cc78-11e3-81ab-4c9367dc0958", ""},
		{"missing", "", "", "no X-GitHub-Delivery header"},
		{"two joined", "72d3162e-cc78-11e3-81ab-4c9367dc0958,0b989ba4-242f-11e5-81e1-c7b0e2a4ac6b", "", "more than one value"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := webhook.GitHubDelivery(webhook.Header{"x-github-delivery": tc.header}, nil)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("expect an error saying %q, got %q, %v", tc.err, got, err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("expect %q, got %q, %v", tc.want, got, err)
			}
		})
	}
}

// TestEmptySecretStopsNew: an HMAC under an empty key is one anybody can
// compute, so a verifier without a usable secret fails at start-up.
func TestEmptySecretStopsNew(t *testing.T) {
	store, err := idem.New(&nopTx{}, "processed")
	if err != nil {
		t.Fatal(err)
	}
	handler := func(context.Context, webhook.Request) (webhook.Response, idem.Effect, error) {
		return webhook.Response{}, idem.Effect{}, nil
	}
	for _, tc := range []struct {
		name string
		opt  func(*webhook.Options)
	}{
		{"stripe, empty secret", webhook.Stripe("")},
		{"stripe, no secret", webhook.Stripe()},
		{"github, one of two empty", webhook.GitHub("s3cret", "")},
		{"hmac, empty secret", func(o *webhook.Options) { o.Verifier = &webhook.HMACVerifier{Secrets: []string{""}} }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := webhook.New(store, handler, tc.opt); err == nil || !strings.Contains(err.Error(), "secret") {
				t.Errorf("expect New to refuse the verifier, got %v", err)
			}
		})
	}
	if _, err := webhook.New(store, handler, webhook.Stripe("whsec_ok")); err != nil {
		t.Errorf("a usable secret refused: %v", err)
	}
}

// nopTx commits every transaction; New never calls it here.
type nopTx struct{}

func (nopTx) TransactWriteItems(context.Context, *dynamodb.TransactWriteItemsInput, ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error) {
	return &dynamodb.TransactWriteItemsOutput{}, nil
}
