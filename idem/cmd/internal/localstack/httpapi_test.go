package localstack

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
)

func TestMatchRoute(t *testing.T) {
	routes := []Route{
		{Function: "Credits", Method: "POST", Path: "/webhooks/credits"},
		{Function: "Any", Method: "ANY", Path: "/webhooks/credits"},
		{Function: "Item", Method: "GET", Path: "/items/{id}"},
		{Function: "Proxy", Method: "ANY", Path: "/items/{proxy+}"},
		{Function: "Default", Method: "ANY", Path: "$default"},
	}
	for _, tc := range []struct {
		method, path, want string
		params             map[string]string
	}{
		{"POST", "/webhooks/credits", "Credits", nil},
		{"PUT", "/webhooks/credits", "Any", nil},
		{"GET", "/items/42", "Item", map[string]string{"id": "42"}},
		{"GET", "/items/a%20b", "Item", map[string]string{"id": "a b"}},
		{"GET", "/items/42/parts", "Proxy", map[string]string{"proxy": "42/parts"}},
		{"DELETE", "/items/42", "Proxy", map[string]string{"proxy": "42"}},
		{"GET", "/elsewhere", "Default", nil},
	} {
		t.Run(tc.method+" "+tc.path, func(t *testing.T) {
			r, params, ok := matchRoute(routes, tc.method, tc.path)
			if !ok || r.Function != tc.want || !reflect.DeepEqual(params, tc.params) {
				t.Fatalf("expect %s %v, got %s %v (%v)", tc.want, tc.params, r.Function, params, ok)
			}
		})
	}
	if _, _, ok := matchRoute(routes[:1], "GET", "/webhooks/credits"); ok {
		t.Errorf("expect no route for a method the route does not take")
	}
}

// invokerFunc is an Invoker that is a function.
type invokerFunc func(ctx context.Context, function string, payload []byte) ([]byte, error)

func (f invokerFunc) Invoke(ctx context.Context, function string, payload []byte) ([]byte, error) {
	return f(ctx, function, payload)
}

func TestHTTPAPIEvent(t *testing.T) {
	var got events.APIGatewayV2HTTPRequest
	api := &HTTPAPI{
		Routes:    []Route{{Function: "Fn", Method: "POST", Path: "/webhooks/{name}"}},
		AccountID: AccountID,
		Now:       func() time.Time { return time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC) },
		Invoker: invokerFunc(func(_ context.Context, fn string, payload []byte) ([]byte, error) {
			if err := json.Unmarshal(payload, &got); err != nil {
				t.Errorf("the event is not an APIGatewayV2HTTPRequest: %v", err)
			}
			return []byte(`{"statusCode":201,"headers":{"X-Answer":"yes"},"cookies":["a=1"],"body":"aGk=","isBase64Encoded":true}`), nil
		}),
	}
	srv := httptest.NewServer(api)
	defer srv.Close()

	for _, tc := range []struct {
		name, contentType string
		body              []byte
		wantBody          string
		wantBase64        bool
	}{
		{"json", "application/json", []byte(`{"id":"evt_001"}`), `{"id":"evt_001"}`, false},
		{"text without type", "", []byte("plain"), "plain", false},
		{"binary", "application/octet-stream", []byte{0xff, 0x00, 0x01}, base64.StdEncoding.EncodeToString([]byte{0xff, 0x00, 0x01}), true},
		{"invalid utf-8 json", "application/json", []byte{'"', 0xff, '"'}, base64.StdEncoding.EncodeToString([]byte{'"', 0xff, '"'}), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequest("POST", srv.URL+"/webhooks/credits?a=1&a=2&b=x", strings.NewReader(string(tc.body)))
			if tc.contentType != "" {
				req.Header.Set("Content-Type", tc.contentType)
			}
			req.Header.Set("Idempotency-Key", "evt_001")
			req.Header.Add("X-Multi", "1")
			req.Header.Add("X-Multi", "2")
			req.Header.Set("Cookie", "s=1; t=2")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()

			if got.Version != "2.0" || got.RouteKey != "POST /webhooks/{name}" || got.RawPath != "/webhooks/credits" || got.RawQueryString != "a=1&a=2&b=x" {
				t.Errorf("expect version 2.0, routeKey, rawPath and rawQueryString, got %q %q %q %q", got.Version, got.RouteKey, got.RawPath, got.RawQueryString)
			}
			if got.Headers["idempotency-key"] != "evt_001" || got.Headers["x-multi"] != "1,2" || got.Headers["cookie"] != "" {
				t.Errorf("expect lower-cased, comma-joined headers without the cookie header, got %v", got.Headers)
			}
			if !reflect.DeepEqual(got.Cookies, []string{"s=1", "t=2"}) {
				t.Errorf("expect cookies [s=1 t=2], got %v", got.Cookies)
			}
			if got.QueryStringParameters["a"] != "1,2" || got.PathParameters["name"] != "credits" {
				t.Errorf("expect query a=1,2 and path name=credits, got %v %v", got.QueryStringParameters, got.PathParameters)
			}
			rc := got.RequestContext
			if rc.HTTP.Method != "POST" || rc.HTTP.Path != "/webhooks/credits" || rc.HTTP.SourceIP != "127.0.0.1" || rc.RouteKey != got.RouteKey ||
				rc.Stage != "$default" || rc.AccountID != AccountID || rc.TimeEpoch != time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC).UnixMilli() || rc.Time != "30/Nov/2026:10:00:00 +0000" || rc.RequestID == "" {
				t.Errorf("request context: got %+v", rc)
			}
			if got.Body != tc.wantBody || got.IsBase64Encoded != tc.wantBase64 {
				t.Errorf("expect body %q (base64 %v), got %q (%v)", tc.wantBody, tc.wantBase64, got.Body, got.IsBase64Encoded)
			}
			if resp.StatusCode != 201 || resp.Header.Get("X-Answer") != "yes" || resp.Header.Get("Set-Cookie") != "a=1" || string(body) != "hi" {
				t.Errorf("expect 201, X-Answer, the cookie and body hi, got %d %v %q", resp.StatusCode, resp.Header, body)
			}
		})
	}
}

func TestHTTPAPIResponses(t *testing.T) {
	for _, tc := range []struct {
		name     string
		out      string
		err      error
		status   int
		wantBody string
	}{
		{"no statusCode: the JSON is the body", `{"ok":true}`, nil, 200, `{"ok":true}`},
		{"function error", "", &FunctionError{Type: "errorString", Message: "boom"}, 500, `{"message":"Internal Server Error"}`},
		{"not JSON", `nope`, nil, 500, `{"message":"Internal Server Error"}`},
		{"plain body", `{"statusCode":409,"body":"busy"}`, nil, 409, "busy"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			api := &HTTPAPI{Routes: []Route{{Function: "Fn", Method: "ANY", Path: "$default"}},
				Invoker: invokerFunc(func(context.Context, string, []byte) ([]byte, error) { return []byte(tc.out), tc.err })}
			rec := httptest.NewRecorder()
			api.ServeHTTP(rec, httptest.NewRequest("POST", "/x", strings.NewReader("{}")))
			if rec.Code != tc.status || rec.Body.String() != tc.wantBody {
				t.Fatalf("expect %d %q, got %d %q", tc.status, tc.wantBody, rec.Code, rec.Body.String())
			}
		})
	}
	api := &HTTPAPI{Routes: []Route{{Function: "Fn", Method: "POST", Path: "/a"}}}
	rec := httptest.NewRecorder()
	api.ServeHTTP(rec, httptest.NewRequest("POST", "/b", nil))
	if rec.Code != 404 {
		t.Errorf("expect 404 without a route, got %d", rec.Code)
	}
}
