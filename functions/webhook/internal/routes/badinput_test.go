package routes_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/idemkit/kit/idem/idemtest"
)

// TestBadInputThroughTheFunction sends bad deliveries as the deployed
// function gets them, raw events through Mux.Handle in both payload
// formats: each is answered with its status and problem detail, and
// nothing is claimed or credited.
func TestBadInputThroughTheFunction(t *testing.T) {
	f := newFn(t, map[string]string{"STRIPE_WEBHOOK_SECRET": stripeSecret, "WEBHOOK_SECRET": genericSecret})
	now := time.Now()
	sign := func(body string) string { return idemtest.HMACSignature(genericSecret, []byte(body)) }
	credit := func(key, fields string) string { return fmt.Sprintf(`{"id":%q,"account":"acc-9",%s}`, key, fields) }
	good := credit("evt_1", `"cents":500`)
	badUTF8 := "{\"id\":\"evt_1\",\"account\":\"\xff\",\"cents\":5}"
	// v2 is an HTTP API event; v1 a REST API one, headers with every value
	// in multiValueHeaders and the last in headers.
	v2 := func(path, body string, b64 bool, h map[string]string) []byte {
		e := events.APIGatewayV2HTTPRequest{Version: "2.0", RouteKey: "POST " + path, RawPath: path, Headers: h, Body: body, IsBase64Encoded: b64}
		e.RequestContext.HTTP.Method = "POST"
		b, _ := json.Marshal(e)
		return b
	}
	v1 := func(path, body string, b64 bool, multi map[string][]string) []byte {
		single := map[string]string{}
		for k, vs := range multi {
			single[k] = vs[len(vs)-1]
		}
		b, _ := json.Marshal(events.APIGatewayProxyRequest{HTTPMethod: "POST", Resource: path, Path: path,
			Headers: single, MultiValueHeaders: multi, Body: body, IsBase64Encoded: b64})
		return b
	}
	signed := func(body string) map[string]string { return map[string]string{"x-signature": sign(body)} }
	pi := func(amount, metadata string) string {
		return fmt.Sprintf(`{"id":"evt_s","type":"payment_intent.succeeded","data":{"object":{"amount_received":%s,"metadata":%s}}}`, amount, metadata)
	}
	stripe := func(body string, at time.Time) map[string]string {
		return map[string]string{"stripe-signature": idemtest.StripeSignature(stripeSecret, at, []byte(body))}
	}
	paid := pi("2500", `{"account":"acc-9"}`)
	for _, tc := range []struct {
		name   string
		event  []byte
		status int
		detail string
	}{
		{"credits: empty body", v2("/webhooks/credits", "", false, signed("")), 400, "the body is empty"},
		// An event is JSON, so a body that is not UTF-8 comes base64-encoded.
		{"credits: invalid UTF-8", v2("/webhooks/credits", base64.StdEncoding.EncodeToString([]byte(badUTF8)), true, signed(badUTF8)), 400, "not valid UTF-8"},
		{"credits: cents a string", v2("/webhooks/credits", credit("evt_1", `"cents":"500"`), false, signed(credit("evt_1", `"cents":"500"`))), 400, "whole number"},
		{"credits: negative cents (v1)", v1("/webhooks/credits", credit("evt_1", `"cents":-5`), false, map[string][]string{"X-Signature": {sign(credit("evt_1", `"cents":-5`))}}), 400, "must be positive"},
		{"credits: cents overflow", v2("/webhooks/credits", credit("evt_1", `"cents":9223372036854775808`), false, signed(credit("evt_1", `"cents":9223372036854775808`))), 400, "64 bits"},
		{"credits: id over 2,048 bytes (v1)", v1("/webhooks/credits", credit(strings.Repeat("e", 2049), `"cents":5`), false, map[string][]string{"X-Signature": {sign(credit(strings.Repeat("e", 2049), `"cents":5`))}}), 400, "2049 bytes"},
		{"credits: CR LF in the key (v1)", v1("/webhooks/credits", good, false, map[string][]string{"Idempotency-Key": {"evt_1\r\nX-Injected: 1"}, "X-Signature": {sign(good)}}), 400, "control"},
		{"credits: two Idempotency-Key headers (v1)", v1("/webhooks/credits", good, false, map[string][]string{"Idempotency-Key": {"evt_1", "evt_2"}, "X-Signature": {sign(good)}}), 400, "more than one value"},
		{"credits: two keys combined (v2)", v2("/webhooks/credits", good, false, map[string]string{"idempotency-key": "evt_1,evt_2", "x-signature": sign(good)}), 400, "more than one value"},
		{"credits: two X-Signature headers (v1)", v1("/webhooks/credits", good, false, map[string][]string{"X-Signature": {sign(good), sign("other")}}), 401, "not sha256=<64 hex digits>"},
		{"credits: base64 flag on a plain body (v1)", v1("/webhooks/credits", good, true, map[string][]string{"X-Signature": {sign(good)}}), 400, "not valid base64"},
		{"credits: oversize", v2("/webhooks/credits", credit("evt_1", `"cents":5,"pad":"`+strings.Repeat("x", 256<<10)+`"`), false, nil), 413, "larger than"},
		{"stripe: expired timestamp", v2("/webhooks/stripe", paid, false, stripe(paid, now.Add(-10*time.Minute))), 401, "old"},
		{"stripe: future timestamp (v1)", v1("/webhooks/stripe", paid, false, map[string][]string{"Stripe-Signature": {stripe(paid, now.Add(10*time.Minute))["stripe-signature"]}}), 401, "in the future"},
		{"stripe: amount a string", v2("/webhooks/stripe", pi(`"2500"`, `{"account":"acc-9"}`), false, stripe(pi(`"2500"`, `{"account":"acc-9"}`), now)), 400, "amount_received"},
		{"stripe: negative amount", v2("/webhooks/stripe", pi("-2500", `{"account":"acc-9"}`), false, stripe(pi("-2500", `{"account":"acc-9"}`), now)), 400, "amount_received"},
		{"stripe: account a number", v2("/webhooks/stripe", pi("2500", `{"account":9}`), false, stripe(pi("2500", `{"account":9}`), now)), 400, "not a PaymentIntent"},
		// Refused before the claim: the type is part of the event's fingerprint.
		{"stripe: type a number", v2("/webhooks/stripe", `{"id":"evt_s","type":5}`, false, stripe(`{"id":"evt_s","type":5}`, now)), 400, `fingerprint: the body's "type" field is not a string`},
		{"stripe: two signatures, the last forged (v1)", v1("/webhooks/stripe", paid, false, map[string][]string{"Stripe-Signature": {stripe(paid, now)["stripe-signature"], "t=1,v1=" + strings.Repeat("0", 64)}}), 401, "no v1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := f.mux.Handle(context.Background(), tc.event)
			if err != nil {
				t.Fatalf("Handle: %v", err)
			}
			var status int
			var headers map[string]string
			var body string
			switch r := out.(type) {
			case events.APIGatewayV2HTTPResponse:
				status, headers, body = r.StatusCode, r.Headers, r.Body
			case events.APIGatewayProxyResponse:
				status, headers, body = r.StatusCode, r.Headers, r.Body
			}
			var p struct{ Detail string }
			_ = json.Unmarshal([]byte(body), &p)
			if status != tc.status || headers["Content-Type"] != "application/problem+json" || !strings.Contains(p.Detail, tc.detail) {
				t.Fatalf("expect a %d problem saying %q, got %d %v %s", tc.status, tc.detail, status, headers, body)
			}
		})
	}
	if _, err := f.mux.Handle(context.Background(), json.RawMessage(`{"Records":[]}`)); err == nil || !strings.Contains(err.Error(), "not an API Gateway request") {
		t.Errorf("an SQS event: expect the function's one error, got %v", err)
	}
	if n, b := f.Claims(t), f.Balance(t, "acc-9"); n != 0 || b != 0 {
		t.Errorf("expect no claim and no credit, got %d claim(s) and a balance of %d", n, b)
	}
}
