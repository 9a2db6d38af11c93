package webhook_test

import (
	"context"
	"encoding/base64"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/idemkit/kit/idem/idemtest"
	"github.com/idemkit/kit/idem/webhook"
)

// badV2 is an HTTP API event as API Gateway builds it.
func badV2(body string, b64 bool, h map[string]string) events.APIGatewayV2HTTPRequest {
	e := events.APIGatewayV2HTTPRequest{Version: "2.0", RouteKey: "POST /hook", RawPath: "/hook", Headers: h, Body: body, IsBase64Encoded: b64}
	e.RequestContext.HTTP.Method = "POST"
	return e
}

// badV1 is a REST API event with repeated headers: API Gateway puts every
// value in multiValueHeaders and the last one in headers.
func badV1(body string, multi map[string][]string) events.APIGatewayProxyRequest {
	single := map[string]string{}
	for k, vs := range multi {
		single[k] = vs[len(vs)-1]
	}
	return events.APIGatewayProxyRequest{HTTPMethod: "POST", Path: "/hook", Resource: "/hook", Headers: single, MultiValueHeaders: multi, Body: body}
}

// TestBadInputCommitsNothing sends what a broken or hostile sender might:
// each gets its own status and problem detail, is logged with that reason
// as Refused (turned away before the claim) or Failed (refused by the
// handler), and leaves no claim and no credit.
func TestBadInputCommitsNothing(t *testing.T) {
	now := time.Unix(1_750_000_000, 0)
	stripeBody := `{"id":"evt_1","account":"acc-9","cents":500}`
	stripeAt := func(at time.Time) map[string]string {
		return map[string]string{"stripe-signature": idemtest.StripeSignature("whsec_a", at, []byte(stripeBody))}
	}
	sig := idemtest.HMACSignature(secret, []byte(creditBody))
	big := `{"account":"acc-9","cents":1,"pad":"` + strings.Repeat("x", 256<<10) + `"}`
	k := func(key string) map[string]string { return map[string]string{"idempotency-key": key} }
	credit := func(fields string) string { return `{"account":"acc-9",` + fields + `}` }
	for _, tc := range []struct {
		name     string
		receiver string // "plain" (key from the header or the body's id), "signed" (X-Signature) or "stripe"
		v2       events.APIGatewayV2HTTPRequest
		v1       *events.APIGatewayProxyRequest // sent instead of v2 when set
		status   int
		detail   string
		failed   bool // refused by the handler, not before the claim
	}{
		{"empty body", "plain", badV2("", false, k("k")), nil, 400, "the body is empty", false},
		{"blank body", "plain", badV2(" \n", false, k("k")), nil, 400, "not one valid JSON value", false},
		{"invalid JSON", "plain", badV2(`{"account":`, false, k("k")), nil, 400, "not one valid JSON value", false},
		{"invalid UTF-8 in the body", "plain", badV2("{\"account\":\"acc-\xff\",\"cents\":1}", false, k("k")), nil, 400, "not valid UTF-8", false},
		{"two JSON values", "plain", badV2(creditBody+creditBody, false, k("k")), nil, 400, "after top-level value", false},
		{"body id a number", "plain", badV2(`{"id":7,"account":"acc-9","cents":1}`, false, nil), nil, 400, `"id" field is not a string`, false},
		{"body id null", "plain", badV2(`{"id":null,"account":"acc-9","cents":1}`, false, nil), nil, 400, "the idempotency key is empty", false},
		{"body not an object", "plain", badV2(`["evt_1"]`, false, nil), nil, 400, "not a JSON object", false},
		{"cents a string", "plain", badV2(credit(`"cents":"500"`), false, k("k")), nil, 400, `"cents"`, true},
		{"account a number", "plain", badV2(`{"account":9,"cents":500}`, false, k("k")), nil, 400, `"account"`, true},
		{"negative cents", "plain", badV2(credit(`"cents":-500`), false, k("k")), nil, 400, `"cents"`, true},
		{"zero cents", "plain", badV2(credit(`"cents":0`), false, k("k")), nil, 400, `"cents"`, true},
		{"cents overflow int64", "plain", badV2(credit(`"cents":9223372036854775808`), false, k("k")), nil, 400, `"cents"`, true},
		{"cents in exponent form", "plain", badV2(credit(`"cents":1e3`), false, k("k")), nil, 400, `"cents"`, true},
		{"header key over 2,048 bytes", "plain", badV2(creditBody, false, k(strings.Repeat("k", 2049))), nil, 400, "2049 bytes", false},
		{"body id over 2,048 bytes", "plain", badV2(`{"id":"`+strings.Repeat("e", 3000)+`","account":"acc-9","cents":1}`, false, nil), nil, 400, "3000 bytes", false},
		{"CR LF in the key", "plain", badV2(creditBody, false, k("k\r\nX-Injected: 1")), nil, 400, "control", false},
		{"NUL in the key", "plain", badV2(creditBody, false, k("k\x00")), nil, 400, "control", false},
		{"a key of spaces", "plain", badV2(creditBody, false, k("   ")), nil, 400, "the idempotency key is empty", false},
		{"a quoted key of spaces", "plain", badV2(creditBody, false, k(`"   "`)), nil, 400, "the idempotency key is empty", false},
		{"body id of spaces", "plain", badV2(`{"id":"   ","account":"acc-9","cents":1}`, false, nil), nil, 400, "the idempotency key is empty", false},
		{"an unclosed quote", "plain", badV2(creditBody, false, k(`"abc`)), nil, 400, "does not close or open", false},
		{"CR LF inside a quoted key", "plain", badV2(creditBody, false, k("\"k\r\n\"")), nil, 400, "control", false},
		{"invalid UTF-8 in the key", "plain", badV2(creditBody, false, k("k\xff")), nil, 400, "non-ASCII", false},
		{"base64 flag on a plain body", "plain", badV2(creditBody, true, k("k")), nil, 400, "not valid base64", false},
		{"base64 body without the flag", "plain", badV2(base64.StdEncoding.EncodeToString([]byte(creditBody)), false, k("k")), nil, 400, "not one valid JSON value", false},
		{"URL-safe base64", "plain", badV2(base64.URLEncoding.EncodeToString([]byte("\xfb\xff\xfe")), true, k("k")), nil, 400, "not valid base64", false},
		{"base64 without padding", "plain", badV2(base64.RawStdEncoding.EncodeToString([]byte(creditBody)), true, k("k")), nil, 400, "not valid base64", false},
		{"oversize body", "plain", badV2(big, false, k("k")), nil, 413, "larger than 262144 bytes", false},
		{"oversize base64 body", "plain", badV2(base64.StdEncoding.EncodeToString([]byte(big)), true, k("k")), nil, 413, "larger than 262144 bytes", false},
		{"two Idempotency-Key headers", "plain", events.APIGatewayV2HTTPRequest{},
			ptr(badV1(creditBody, map[string][]string{"Idempotency-Key": {"k-1", "k-2"}})), 400, "more than one", false},
		{"two quoted Idempotency-Key values joined", "plain", badV2(creditBody, false, k(`"k-1", "k-2"`)), nil, 400, "unescaped", false},
		{"two X-Signature headers", "signed", events.APIGatewayV2HTTPRequest{},
			ptr(badV1(creditBody, map[string][]string{"Idempotency-Key": {"k"}, "X-Signature": {sig, idemtest.HMACSignature("other", []byte(creditBody))}})), 401, "X-Signature is not sha256=<64 hex digits>", false},
		{"CR LF after the signature", "signed", badV2(creditBody, false, map[string]string{"idempotency-key": "k", "x-signature": sig + "\r\n"}), nil, 401, "not sha256=<64 hex digits>", false},
		{"Stripe timestamp expired", "stripe", badV2(stripeBody, false, stripeAt(now.Add(-301*time.Second))), nil, 401, "301s old", false},
		{"Stripe timestamp in the future", "stripe", badV2(stripeBody, false, stripeAt(now.Add(301*time.Second))), nil, 401, "301s in the future", false},
		{"Stripe timestamp not a number", "stripe", badV2(stripeBody, false, map[string]string{"stripe-signature": "t=soon,v1=" + strings.Repeat("0", 64)}), nil, 401, "no t=<unix seconds>", false},
		{"Stripe timestamp overflowing", "stripe", badV2(stripeBody, false, map[string]string{"stripe-signature": "t=99999999999999999999,v1=" + strings.Repeat("0", 64)}), nil, 401, "no t=<unix seconds>", false},
		{"two Stripe-Signature headers, the last forged", "stripe", events.APIGatewayV2HTTPRequest{},
			ptr(badV1(stripeBody, map[string][]string{"Stripe-Signature": {stripeAt(now)["stripe-signature"], "t=1,v1=" + strings.Repeat("0", 64)}})), 401, "no v1", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			r := e.receiver(t, func(o *webhook.Options) {
				switch tc.receiver {
				case "plain":
					o.Key = webhook.IdempotencyKey("id")
				case "signed":
					o.Verifier = &webhook.HMACVerifier{Secrets: []string{secret}}
				case "stripe":
					webhook.Stripe()(o)
					o.Verifier = &webhook.StripeVerifier{Secrets: []string{"whsec_a"}, Now: func() time.Time { return now }}
				}
			})
			var a answer
			if tc.v1 != nil {
				resp, err := r.HandleV1(context.Background(), *tc.v1)
				if err != nil {
					t.Fatal(err)
				}
				a = decodeAnswer(t, resp.StatusCode, resp.Headers, resp.Body, resp.IsBase64Encoded)
			} else {
				resp, err := r.HandleV2(context.Background(), tc.v2)
				if err != nil {
					t.Fatal(err)
				}
				a = decodeAnswer(t, resp.StatusCode, resp.Headers, resp.Body, resp.IsBase64Encoded)
			}
			if a.status != tc.status {
				t.Fatalf("expect %d, got %d %s", tc.status, a.status, a.body)
			}
			if d := problemDetail(t, a); !strings.Contains(d, tc.detail) {
				t.Errorf("expect the detail to say %q, got %q", tc.detail, d)
			}
			want := `"outcome":"Refused"`
			if tc.failed {
				want = `"outcome":"Failed"`
			}
			if log := e.log.String(); !strings.Contains(log, want) || !strings.Contains(log, `"error":`) {
				t.Errorf("expect the delivery logged with %s and its reason, got %q", want, log)
			}
			if n, b := e.Claims(t), e.Balance(t, "acc-9"); n != 0 || b != 0 {
				t.Errorf("expect no claim and no credit, got %d claim(s) and a balance of %d", n, b)
			}
		})
	}
}

func ptr[T any](v T) *T { return &v }

// TestQuotedKeyMayHoldAComma: refusing a bare key with a comma (two
// headers combined) leaves a way to send a key that holds one.
func TestQuotedKeyMayHoldAComma(t *testing.T) {
	e := newEnv(t)
	r := e.receiver(t)
	for range 2 {
		if a := sendV2(t, r, delivery{body: creditBody, headers: keyed(`"order-7,line-2"`)}); a.status != 200 || a.body != `{"id":"order-7,line-2","status":"processed"}` {
			t.Fatalf("expect 200 for the key order-7,line-2, got %d %s", a.status, a.body)
		}
	}
	if n, b := e.Claims(t), e.Balance(t, "acc-9"); n != 1 || b != 500 {
		t.Errorf("expect one claim and a balance of 500, got %d and %d", n, b)
	}
}

// TestRefusedBodyLoggedUnderItsKey: a body that is not JSON is refused
// before the claim, and its log line names the key its header gave, so
// that the delivery can be found by its key; a key only the body holds is
// not read from a body that is not JSON.
func TestRefusedBodyLoggedUnderItsKey(t *testing.T) {
	for _, tc := range []struct {
		name, body string
		headers    map[string]string
		id, key    string
	}{
		{"a header key", `{"account":`, map[string]string{"idempotency-key": "evt_bad"}, "evt_bad", "webhook#evt_bad"},
		{"invalid UTF-8", "{\"account\":\"acc-\xff\"}", map[string]string{"idempotency-key": "evt_bad"}, "evt_bad", "webhook#evt_bad"},
		{"a key in the body only", `{"id":"evt_bad","account":`, nil, "", ""},
		{"a key the header cannot be", `{"account":`, map[string]string{"idempotency-key": "k\r\n"}, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			r := e.receiver(t, func(o *webhook.Options) { o.Key = webhook.IdempotencyKey("id") })
			resp, err := r.HandleV2(context.Background(), badV2(tc.body, false, tc.headers))
			if err != nil || resp.StatusCode != 400 {
				t.Fatalf("expect 400, got %d, %v", resp.StatusCode, err)
			}
			lines := e.logged(t)
			if len(lines) != 1 || lines[0]["outcome"] != "Refused" || lines[0]["id"] != tc.id || lines[0]["key"] != tc.key {
				t.Errorf("expect one Refused line with id %q and key %q, got %s", tc.id, tc.key, e.log.String())
			}
			if n := e.Claims(t); n != 0 {
				t.Errorf("expect no claim, got %d", n)
			}
		})
	}
}
