package webhook_test

import (
	"context"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambdaurl"

	"github.com/idemkit/kit/idem/idemtest"
	"github.com/idemkit/kit/idem/webhook"
)

// entry is one way a delivery reaches a Receiver: send hands it d, with
// ctx, and returns the answer as the sender reads it.
type entry struct {
	name string
	send func(ctx context.Context, t *testing.T, r *webhook.Receiver, d delivery) answer
}

// entries are every way in: API Gateway's two payload formats, net/http
// (directly, and as lambdaurl.Start serves it), and an ALB target group
// with either header format.
var entries = []entry{
	{"HTTP API", func(ctx context.Context, t *testing.T, r *webhook.Receiver, d delivery) answer {
		resp, err := r.HandleV2(ctx, d.v2())
		if err != nil {
			t.Fatalf("HandleV2 returned an error: %v", err)
		}
		return decodeAnswer(t, resp.StatusCode, resp.Headers, resp.Body, resp.IsBase64Encoded)
	}},
	{"REST API", func(ctx context.Context, t *testing.T, r *webhook.Receiver, d delivery) answer {
		resp, err := r.HandleV1(ctx, d.v1())
		if err != nil {
			t.Fatalf("HandleV1 returned an error: %v", err)
		}
		return decodeAnswer(t, resp.StatusCode, resp.Headers, resp.Body, resp.IsBase64Encoded)
	}},
	{"net/http", sendHTTP},
	{"lambdaurl", sendFunctionURL},
	{"ALB", sendALB(false)},
	{"ALB multi-value", sendALB(true)},
}

// sendHTTP serves d through the Receiver's ServeHTTP, its body as sent
// (net/http has no base64 step).
func sendHTTP(ctx context.Context, t *testing.T, r *webhook.Receiver, d delivery) answer {
	t.Helper()
	req := httptest.NewRequestWithContext(ctx, "POST", "/webhooks/credits", strings.NewReader(d.body))
	for k, v := range d.headers {
		req.Header.Set(k, v)
	}
	rec := httptest.NewRecorder()
	r.ServeHTTP(rec, req)
	return httpAnswer(t, rec.Result())
}

// sendFunctionURL serves d as lambdaurl.Start does: the function URL's
// event, built into an *http.Request by lambdaurl.Wrap, the answer
// streamed back.
func sendFunctionURL(ctx context.Context, t *testing.T, r *webhook.Receiver, d delivery) answer {
	t.Helper()
	e := &events.LambdaFunctionURLRequest{Version: "2.0", RawPath: "/webhooks/credits", Headers: map[string]string{},
		Body: d.wireBody(), IsBase64Encoded: d.base64}
	for k, v := range d.headers {
		e.Headers[strings.ToLower(k)] = v
	}
	e.RequestContext.HTTP.Method, e.RequestContext.DomainName = "POST", "abcdefg.lambda-url.us-east-1.on.aws"
	resp, err := lambdaurl.Wrap(r)(ctx, e)
	if err != nil {
		t.Fatalf("lambdaurl: %v", err)
	}
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("lambdaurl: the streamed body: %v", err)
	}
	return answer{resp.StatusCode, resp.Headers, string(body)}
}

// sendALB serves d as an ALB target group hands it over, its headers in
// either format; it checks the answer uses the same one, with a status
// description.
func sendALB(multi bool) func(context.Context, *testing.T, *webhook.Receiver, delivery) answer {
	return func(ctx context.Context, t *testing.T, r *webhook.Receiver, d delivery) answer {
		t.Helper()
		e := events.ALBTargetGroupRequest{HTTPMethod: "POST", Path: "/webhooks/credits", Body: d.wireBody(), IsBase64Encoded: d.base64}
		if multi {
			e.MultiValueHeaders = map[string][]string{}
			for k, v := range d.headers {
				e.MultiValueHeaders[strings.ToLower(k)] = []string{v}
			}
		} else {
			e.Headers = map[string]string{}
			for k, v := range d.headers {
				e.Headers[strings.ToLower(k)] = v
			}
		}
		resp, err := r.HandleALB(ctx, e)
		if err != nil {
			t.Fatalf("HandleALB returned an error: %v", err)
		}
		return albAnswer(t, resp, multi)
	}
}

// albAnswer checks an ALB answer's format and returns it decoded.
func albAnswer(t *testing.T, resp events.ALBTargetGroupResponse, multi bool) answer {
	t.Helper()
	if want := fmt.Sprintf("%d %s", resp.StatusCode, http.StatusText(resp.StatusCode)); resp.StatusDescription != want {
		t.Errorf("statusDescription: want %q, got %q", want, resp.StatusDescription)
	}
	headers := resp.Headers
	if multi {
		if resp.Headers != nil {
			t.Errorf("a multi-value target group reads multiValueHeaders; headers is %v", resp.Headers)
		}
		headers = map[string]string{}
		for k, vs := range resp.MultiValueHeaders {
			headers[k] = strings.Join(vs, ",")
		}
	} else if resp.MultiValueHeaders != nil {
		t.Errorf("a single-value target group reads headers; multiValueHeaders is %v", resp.MultiValueHeaders)
	}
	return decodeAnswer(t, resp.StatusCode, headers, resp.Body, resp.IsBase64Encoded)
}

// httpAnswer reads a net/http response, each header's values joined.
func httpAnswer(t *testing.T, resp *http.Response) answer {
	t.Helper()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	headers := map[string]string{}
	for k, vs := range resp.Header {
		headers[k] = strings.Join(vs, ",")
	}
	return answer{resp.StatusCode, headers, string(body)}
}

// TestEveryEntryReplaysTheFirstAnswer: one credit delivered three times
// through each entry, its body plain or base64 (API Gateway's and ALB's
// encoding of a binary body; net/http has none): one credit, and the
// first answer, byte for byte, replayed with Idempotent-Replayed.
func TestEveryEntryReplaysTheFirstAnswer(t *testing.T) {
	for _, en := range entries {
		for _, encoded := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/base64=%v", en.name, encoded), func(t *testing.T) {
				e := newEnv(t)
				r := e.receiver(t)
				d := delivery{body: creditBody, headers: keyed("k-1"), base64: encoded}
				var got []answer
				for i := range 3 {
					a := en.send(context.Background(), t, r, d)
					t.Logf("delivery %d: %d %v %s", i+1, a.status, a.headers, a.body)
					got = append(got, a)
				}
				first := got[0]
				if first.status != 200 || first.body != `{"id":"k-1","status":"processed"}` || first.headers["Idempotent-Replayed"] != "" {
					t.Fatalf("first delivery: want 200 processed, not replayed; got %d %v %s", first.status, first.headers, first.body)
				}
				for i, a := range got[1:] {
					want := maps.Clone(first.headers)
					want["Idempotent-Replayed"] = "true"
					if a.status != first.status || a.body != first.body || !reflect.DeepEqual(a.headers, want) {
						t.Errorf("delivery %d: want %d %v %s, got %d %v %s", i+2, first.status, want, first.body, a.status, a.headers, a.body)
					}
				}
				if b := e.Balance(t, "acc-9"); b != 500 {
					t.Errorf("want one credit of 500, got %d", b)
				}
			})
		}
	}
}

// TestEveryEntryRefusesAlike: the refusals before the claim, and a key
// reused with another payload, answer the same status and detail on every
// entry, with nothing applied for the refusals.
func TestEveryEntryRefusesAlike(t *testing.T) {
	big := `{"account":"acc-9","cents":1,"pad":"` + strings.Repeat("x", 300<<10) + `"}`
	signed := map[string]string{"Idempotency-Key": "k-1", "X-Signature": idemtest.HMACSignature(secret, []byte(creditBody))}
	for _, tc := range []struct {
		name   string
		before []delivery // accepted first
		d      delivery
		status int
		detail string
	}{
		{"oversize", nil, delivery{body: big, headers: keyed("k-1")}, 413, "the body is larger than 262144 bytes"},
		{"oversize base64", nil, delivery{body: big, headers: keyed("k-1"), base64: true}, 413, "the body is larger than 262144 bytes"},
		{"unsigned", nil, delivery{body: creditBody, headers: keyed("k-1")}, 401, "no X-Signature header"},
		{"missing key", nil, delivery{body: creditBody, headers: map[string]string{"X-Signature": signed["X-Signature"]}}, 400, "no Idempotency-Key header"},
		{"two keys joined", nil, delivery{body: creditBody, headers: map[string]string{"Idempotency-Key": "k-1,k-2", "X-Signature": signed["X-Signature"]}}, 400, "more than one value"},
		{"key reused", []delivery{{body: creditBody, headers: signed}}, delivery{body: `{"account":"acc-9","cents":900}`,
			headers: map[string]string{"Idempotency-Key": "k-1", "X-Signature": idemtest.HMACSignature(secret, []byte(`{"account":"acc-9","cents":900}`))}}, 422, `"k-1" was used before`},
	} {
		for _, en := range entries {
			t.Run(tc.name+"/"+en.name, func(t *testing.T) {
				e := newEnv(t)
				r := e.receiver(t, func(o *webhook.Options) { o.Verifier = &webhook.HMACVerifier{Secrets: []string{secret}} })
				for _, d := range tc.before {
					if a := en.send(context.Background(), t, r, d); a.status != 200 {
						t.Fatalf("the first delivery: %d %s", a.status, a.body)
					}
				}
				a := en.send(context.Background(), t, r, tc.d)
				if a.status != tc.status {
					t.Fatalf("want %d, got %d %s", tc.status, a.status, a.body)
				}
				if d := problemDetail(t, a); !strings.Contains(d, tc.detail) {
					t.Errorf("want the detail to say %q, got %q", tc.detail, d)
				}
				if want := int64(len(tc.before)) * 500; e.Balance(t, "acc-9") != want {
					t.Errorf("want a balance of %d, got %d", want, e.Balance(t, "acc-9"))
				}
			})
		}
	}
}
