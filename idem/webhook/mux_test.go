package webhook_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/idemkit/kit/idem"
	"github.com/idemkit/kit/idem/webhook"
)

// routes is a Mux whose receivers answer with their Source.
func routes(t *testing.T) webhook.Mux {
	e := newEnv(t)
	named := func(source string) *webhook.Receiver {
		r, err := webhook.New(e.store, func(_ context.Context, req webhook.Request) (webhook.Response, idem.Effect, error) {
			return webhook.Response{Body: []byte(req.Source)}, idem.Effect{}, nil
		}, func(o *webhook.Options) { o.Source = source })
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	return webhook.Mux{"POST /webhooks/credits": named("credits"), "POST /webhooks/stripe": named("stripe")}
}

func TestMuxRoutesV2(t *testing.T) {
	m := routes(t)
	for i, tc := range []struct {
		name, routeKey, method, path, stage string
		status                              int
		body                                string
	}{
		{"route key", "POST /webhooks/stripe", "POST", "/ignored", "$default", 200, "stripe"},
		{"default route", "$default", "POST", "/webhooks/credits", "$default", 200, "credits"},
		{"function URL", "$default", "POST", "/webhooks/stripe", "", 200, "stripe"},
		{"named stage", "ANY /{proxy+}", "POST", "/prod/webhooks/credits", "prod", 200, "credits"},
		{"unknown path", "$default", "POST", "/webhooks/other", "$default", 404, ""},
		{"wrong method", "$default", "GET", "/webhooks/credits", "$default", 404, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := events.APIGatewayV2HTTPRequest{Version: "2.0", RouteKey: tc.routeKey, RawPath: tc.path,
				Headers: map[string]string{"idempotency-key": "k-" + string(rune('a'+i))}, Body: `{}`}
			e.RequestContext.HTTP.Method, e.RequestContext.Stage = tc.method, tc.stage
			resp, err := m.HandleV2(context.Background(), e)
			if err != nil || resp.StatusCode != tc.status {
				t.Fatalf("expect %d, got %d %s, %v", tc.status, resp.StatusCode, resp.Body, err)
			}
			if tc.status == 404 {
				if !strings.Contains(resp.Body, tc.method+" "+tc.path) || resp.Headers["Content-Type"] != "application/problem+json" {
					t.Errorf("expect a problem naming %s %s, got %v %s", tc.method, tc.path, resp.Headers, resp.Body)
				}
			} else if resp.Body != tc.body {
				t.Errorf("expect the %s route, got %s", tc.body, resp.Body)
			}
		})
	}
}

func TestMuxRoutesV1(t *testing.T) {
	m := routes(t)
	for i, tc := range []struct {
		name, resource, path string
		status               int
		body                 string
	}{
		{"resource", "/webhooks/stripe", "/base/webhooks/stripe", 200, "stripe"},
		{"proxy resource", "/{proxy+}", "/webhooks/credits", 200, "credits"},
		{"unknown", "/{proxy+}", "/nope", 404, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := events.APIGatewayProxyRequest{HTTPMethod: "POST", Resource: tc.resource, Path: tc.path,
				Headers: map[string]string{"Idempotency-Key": "k-" + string(rune('a'+i))}, Body: `{}`}
			resp, err := m.HandleV1(context.Background(), e)
			if err != nil || resp.StatusCode != tc.status || tc.status == 200 && resp.Body != tc.body {
				t.Fatalf("expect %d %s, got %d %s, %v", tc.status, tc.body, resp.StatusCode, resp.Body, err)
			}
		})
	}
}

func TestMuxHandleTellsPayloadFormats(t *testing.T) {
	m := routes(t)
	v2 := `{"version":"2.0","routeKey":"POST /webhooks/credits","rawPath":"/webhooks/credits","headers":{"idempotency-key":"k-1"},"requestContext":{"http":{"method":"POST"}},"body":"{}","isBase64Encoded":false}`
	v1 := `{"resource":"/webhooks/stripe","path":"/webhooks/stripe","httpMethod":"POST","headers":{"Idempotency-Key":"k-2"},"body":"{}"}`
	for _, tc := range []struct {
		name, event string
		check       func(any) bool
	}{
		{"v2", v2, func(r any) bool { a, ok := r.(events.APIGatewayV2HTTPResponse); return ok && a.Body == "credits" }},
		{"v1", v1, func(r any) bool { a, ok := r.(events.APIGatewayProxyResponse); return ok && a.Body == "stripe" }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, err := m.Handle(context.Background(), json.RawMessage(tc.event))
			if err != nil || !tc.check(resp) {
				t.Fatalf("expect the %s route's response, got %#v, %v", tc.name, resp, err)
			}
		})
	}
	for _, ev := range []string{`{"Records":[]}`, `[1]`, `{"version":"2.0","headers":7}`} {
		if resp, err := m.Handle(context.Background(), json.RawMessage(ev)); err == nil {
			t.Errorf("%s: expect an error, got %#v", ev, resp)
		}
	}
	if resp, _ := m.HandleV1(context.Background(), events.APIGatewayProxyRequest{HTTPMethod: http.MethodPost, Path: "/x"}); resp.StatusCode != 404 {
		t.Errorf("expect 404, got %d", resp.StatusCode)
	}
}
