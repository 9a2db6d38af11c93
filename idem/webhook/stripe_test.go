package webhook_test

import (
	"strings"
	"testing"
	"time"

	"github.com/idemkit/kit/idem/idemtest"
	"github.com/idemkit/kit/idem/webhook"
)

func TestStripeDeliveries(t *testing.T) {
	e := newEnv(t)
	now := time.Unix(1_750_000_000, 0)
	r := e.receiver(t, webhook.Stripe(), func(o *webhook.Options) {
		o.Verifier = &webhook.StripeVerifier{Secrets: []string{"whsec_old", "whsec_new"}, Now: func() time.Time { return now }}
	})
	event := func(id string) string {
		return `{"id":"` + id + `","type":"charge.test","account":"acc-9","cents":100}`
	}
	stripe := func(body, secret string, at time.Time) delivery {
		return delivery{body: body, headers: map[string]string{"Stripe-Signature": idemtest.StripeSignature(secret, at, []byte(body))}}
	}
	for _, tc := range []struct {
		name     string
		d        delivery
		status   int
		replayed bool
		detail   string
	}{
		{"first", stripe(event("evt_1"), "whsec_old", now), 200, false, ""},
		{"retry signed later", stripe(event("evt_1"), "whsec_old", now.Add(4*time.Minute)), 200, true, ""},
		{"rotated secret", stripe(event("evt_2"), "whsec_new", now), 200, false, ""},
		{"too old", stripe(event("evt_3"), "whsec_old", now.Add(-301*time.Second)), 401, false, "301s old"},
		{"from the future", stripe(event("evt_3"), "whsec_old", now.Add(301*time.Second)), 401, false, "in the future"},
		{"unknown secret", stripe(event("evt_3"), "whsec_other", now), 401, false, "no v1"},
		{"unsigned", delivery{body: event("evt_3")}, 401, false, "no Stripe-Signature"},
		{"no event id", stripe(`{"type":"charge.test"}`, "whsec_old", now), 400, false, `no "id" field`},
		{"key in a header is ignored", func() delivery {
			d := stripe(`{"type":"charge.test"}`, "whsec_old", now)
			d.headers["Idempotency-Key"] = "k-1"
			return d
		}(), 400, false, `no "id" field`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := sendV2(t, r, tc.d)
			if a.status != tc.status || (a.headers["Idempotent-Replayed"] == "true") != tc.replayed {
				t.Fatalf("expect %d (replayed %v), got %d %v %s", tc.status, tc.replayed, a.status, a.headers, a.body)
			}
			if tc.status == 200 && !strings.Contains(a.body, `"id":"evt_`) {
				t.Errorf("expect the event id as key, got %s", a.body)
			}
			if tc.detail != "" {
				if d := problemDetail(t, a); !strings.Contains(d, tc.detail) {
					t.Errorf("expect the detail to say %q, got %q", tc.detail, d)
				}
			}
		})
	}
	if n, b := e.Claims(t), e.Balance(t, "acc-9"); n != 2 || b != 200 {
		t.Errorf("expect two claims and a balance of 200, got %d and %d", n, b)
	}
	if strings.Contains(e.log.String(), "whsec_") {
		t.Errorf("the log holds a secret: %s", e.log.String())
	}
}

func TestGitHubDeliveries(t *testing.T) {
	e := newEnv(t)
	r := e.receiver(t, webhook.GitHub("gh-secret"))
	body := `{"action":"created","account":"acc-9","cents":300}`
	h := map[string]string{"x-github-delivery": "72d3162e-cc78-11e3-81ab-4c9367dc0958", "x-github-event": "sponsorship",
		"x-hub-signature-256": "sha256=" + hmacHex("gh-secret", body)}
	first, again := sendV1(t, r, delivery{body: body, headers: h}), sendV1(t, r, delivery{body: body, headers: h})
	if first.status != 200 || !strings.Contains(first.body, "72d3162e") || again.body != first.body || again.headers["Idempotent-Replayed"] != "true" {
		t.Fatalf("expect 200 then its replay, got %d %s then %d %v %s", first.status, first.body, again.status, again.headers, again.body)
	}
	delete(h, "x-github-delivery")
	if a := sendV1(t, r, delivery{body: body, headers: h}); a.status != 400 {
		t.Errorf("no delivery id: expect 400, got %d %s", a.status, a.body)
	}
	if b := e.Balance(t, "acc-9"); b != 300 {
		t.Errorf("expect a balance of 300, got %d", b)
	}
}
