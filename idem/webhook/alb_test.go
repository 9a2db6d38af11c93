package webhook_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/idemkit/kit/idem/idemtest"
	"github.com/idemkit/kit/idem/webhook"
)

func readTestdata(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestALBEvents: the samples of a target group's two header formats
// round-trip through aws-lambda-go's type; served one after the other
// (one message: its key and payload, the second base64-encoded as the
// load balancer encodes an octet-stream), they credit once, and each
// answer is, field for field, the response the load balancer reads in
// the format its request came in.
func TestALBEvents(t *testing.T) {
	e := newEnv(t)
	mux := webhook.Mux{"POST /webhooks/credits": e.receiver(t, func(o *webhook.Options) { o.Source = "credits" })}
	for _, tc := range []struct{ request, response string }{
		{"alb-request-headers.json", "alb-response-headers.json"},
		{"alb-request-multivalue-headers.json", "alb-response-multivalue-headers.json"},
	} {
		t.Run(tc.request, func(t *testing.T) {
			raw := readTestdata(t, tc.request)
			idemtest.CheckJSONRoundTrip(t, raw, &events.ALBTargetGroupRequest{})
			var req events.ALBTargetGroupRequest
			if err := json.Unmarshal(raw, &req); err != nil {
				t.Fatal(err)
			}
			resp, err := mux.HandleALB(context.Background(), req)
			if err != nil {
				t.Fatal(err)
			}
			wantRaw := readTestdata(t, tc.response)
			idemtest.CheckJSONRoundTrip(t, wantRaw, &events.ALBTargetGroupResponse{})
			got, _ := json.Marshal(resp)
			var g, w any
			if err := json.Unmarshal(got, &g); err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(wantRaw, &w); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(g, w) {
				t.Errorf("want the response\n%s\ngot\n%s", wantRaw, got)
			}
		})
	}
	if b := e.Balance(t, "acc-9"); b != 500 {
		t.Errorf("want one credit of 500, got %d", b)
	}
}

// TestALBHeaders: a multi-value target group hands a header sent twice as
// a list, joined here as API Gateway joins it, so two Idempotency-Key
// values are refused as on every entry; a single-value one hands only
// the last (the load balancer's choice), which is the key. An unknown
// route is a 404 in the request's header format.
func TestALBHeaders(t *testing.T) {
	e := newEnv(t)
	mux := webhook.Mux{"POST /webhooks/credits": e.receiver(t)}
	twice := idemtest.ALBMultiValue(idemtest.ALBRequest("POST", "/webhooks/credits", creditBody, map[string]string{"Content-Type": "application/json"}))
	twice.MultiValueHeaders["idempotency-key"] = []string{"k-1", "k-2"}
	for _, tc := range []struct {
		name   string
		req    events.ALBTargetGroupRequest
		status int
		detail string
	}{
		{"multi-value, a key sent twice", twice, 400, "more than one value"},
		{"single-value, the last key", idemtest.ALBRequest("POST", "/webhooks/credits", creditBody, map[string]string{"Idempotency-Key": "k-2"}), 200, ""},
		{"unknown route", idemtest.ALBRequest("POST", "/webhooks/other", creditBody, keyed("k-3")), 404, "POST /webhooks/other"},
		{"unknown route, multi-value", idemtest.ALBMultiValue(idemtest.ALBRequest("GET", "/webhooks/credits", "", nil)), 404, "GET /webhooks/credits"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, err := mux.HandleALB(context.Background(), tc.req)
			if err != nil {
				t.Fatal(err)
			}
			a := albAnswer(t, resp, tc.req.MultiValueHeaders != nil)
			if a.status != tc.status {
				t.Fatalf("want %d, got %d %s", tc.status, a.status, a.body)
			}
			if tc.detail != "" && !strings.Contains(problemDetail(t, a), tc.detail) {
				t.Errorf("want the detail to say %q, got %s", tc.detail, a.body)
			}
		})
	}
}
