package webhook_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemkit/kit/idem"
	"github.com/idemkit/kit/idem/idemtest"
	"github.com/idemkit/kit/idem/webhook"
)

func TestMain(m *testing.M) { idemtest.Main(m) }

// env is one test's tables on the real local endpoint (idemtest.Env), a
// Store over them, and the Store's log (at INFO, as deployed) and metrics.
type env struct {
	*idemtest.Env
	store   *idem.Store
	log     *bytes.Buffer
	metrics *bytes.Buffer
}

func newEnv(t *testing.T) *env {
	t.Helper()
	e := &env{Env: idemtest.NewEnv(t), log: &bytes.Buffer{}, metrics: &bytes.Buffer{}}
	e.store = e.newStore(t, e.Client)
	return e
}

// newStore is a Store over e's tables through client, logging to e's log
// and metrics.
func (e *env) newStore(t *testing.T, client idem.TransactWriteAPI, optFns ...func(*idem.Options)) *idem.Store {
	t.Helper()
	store, err := idem.New(client, e.Processed, append([]func(*idem.Options){func(o *idem.Options) {
		o.Observers = []idem.Observer{idemtest.EMF(t, e.metrics)}
		o.Logger = slog.New(slog.NewJSONHandler(e.log, nil))
	}}, optFns...)...)
	if err != nil {
		t.Fatal(err)
	}
	return store
}

// logged is e's log records, one map per line.
func (e *env) logged(t *testing.T) []map[string]any {
	t.Helper()
	return jsonLines(t, e.log.String())
}

// counted is e's metric lines by outcome, and how many lines there were.
func (e *env) counted(t *testing.T) (map[idem.Outcome]int, int) {
	t.Helper()
	lines := jsonLines(t, e.metrics.String())
	n := map[idem.Outcome]int{}
	for _, l := range lines {
		for _, oc := range []idem.Outcome{idem.Processed, idem.Duplicate, idem.Rejected, idem.KeyReuse, idem.Failed, idem.Refused} {
			if _, ok := l[string(oc)]; ok {
				n[oc]++
			}
		}
	}
	return n, len(lines)
}

func jsonLines(t *testing.T, s string) []map[string]any {
	t.Helper()
	var out []map[string]any
	for line := range strings.Lines(s) {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("not a JSON line: %q: %v", line, err)
		}
		out = append(out, m)
	}
	return out
}

func (e *env) receiver(t *testing.T, optFns ...func(*webhook.Options)) *webhook.Receiver {
	t.Helper()
	r, err := webhook.New(e.store, creditHandler(e.Accounts), optFns...)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// creditWrite adds cents to the balance of account in table.
func creditWrite(table, account string, cents int64, cond ...expression.ConditionBuilder) types.TransactWriteItem {
	w, err := idem.Update(table, map[string]string{"account": account}, expression.Add(expression.Name("balance"), expression.Value(cents)), cond...)
	if err != nil {
		panic(err) // a constant expression: cannot fail
	}
	return w
}

// creditHandler credits {"account": …, "cents": …} and answers
// {"id":"<key>","status":"processed"}.
func creditHandler(accounts string) webhook.Handler {
	return func(ctx context.Context, req webhook.Request) (webhook.Response, idem.Effect, error) {
		var c struct {
			Account string `json:"account"`
			Cents   int64  `json:"cents"`
		}
		if err := json.Unmarshal(req.Body, &c); err != nil || c.Account == "" || c.Cents <= 0 {
			return webhook.Response{}, idem.Effect{}, webhook.BadRequest(errors.New(`"account" must be a non-empty string and "cents" a positive whole number`))
		}
		resp, err := webhook.JSON(200, map[string]string{"status": "processed", "id": req.Key})
		return resp, idem.Effect{Writes: []types.TransactWriteItem{creditWrite(accounts, c.Account, c.Cents)}}, err
	}
}

// delivery is one HTTP request, sent in either payload format.
type delivery struct {
	body    string
	headers map[string]string
	base64  bool // send body base64-encoded, as API Gateway does for binary media
}

// answer is a response in either payload format, with the body decoded.
type answer struct {
	status  int
	headers map[string]string
	body    string
}

func (d delivery) wireBody() string {
	if d.base64 {
		return base64.StdEncoding.EncodeToString([]byte(d.body))
	}
	return d.body
}

func (d delivery) v2() events.APIGatewayV2HTTPRequest {
	e := events.APIGatewayV2HTTPRequest{Version: "2.0", RouteKey: "POST /webhooks/credits", RawPath: "/webhooks/credits",
		Headers: d.headers, Body: d.wireBody(), IsBase64Encoded: d.base64}
	e.RequestContext.HTTP.Method = "POST"
	return e
}

func (d delivery) v1() events.APIGatewayProxyRequest {
	multi := map[string][]string{}
	for k, v := range d.headers {
		multi[k] = []string{v}
	}
	return events.APIGatewayProxyRequest{HTTPMethod: "POST", Resource: "/webhooks/credits", Path: "/webhooks/credits",
		Headers: d.headers, MultiValueHeaders: multi, Body: d.wireBody(), IsBase64Encoded: d.base64}
}

func sendV2(t *testing.T, r *webhook.Receiver, d delivery) answer {
	t.Helper()
	resp, err := r.HandleV2(context.Background(), d.v2())
	if err != nil {
		t.Fatalf("HandleV2 returned an error: %v", err)
	}
	return decodeAnswer(t, resp.StatusCode, resp.Headers, resp.Body, resp.IsBase64Encoded)
}

func sendV1(t *testing.T, r *webhook.Receiver, d delivery) answer {
	t.Helper()
	resp, err := r.HandleV1(context.Background(), d.v1())
	if err != nil {
		t.Fatalf("HandleV1 returned an error: %v", err)
	}
	return decodeAnswer(t, resp.StatusCode, resp.Headers, resp.Body, resp.IsBase64Encoded)
}

func decodeAnswer(t *testing.T, status int, headers map[string]string, body string, b64 bool) answer {
	t.Helper()
	if b64 {
		b, err := base64.StdEncoding.DecodeString(body)
		if err != nil {
			t.Fatalf("response body: %v", err)
		}
		body = string(b)
	}
	return answer{status, headers, body}
}

// problemDetail checks a problem+json answer and returns its detail.
func problemDetail(t *testing.T, a answer) string {
	t.Helper()
	if ct := a.headers["Content-Type"]; ct != "application/problem+json" {
		t.Fatalf("expect Content-Type application/problem+json, got %q (body %s)", ct, a.body)
	}
	var p struct {
		Type   string `json:"type"`
		Title  string `json:"title"`
		Status int    `json:"status"`
		Detail string `json:"detail"`
	}
	if err := json.Unmarshal([]byte(a.body), &p); err != nil {
		t.Fatalf("problem body %q: %v", a.body, err)
	}
	if p.Status != a.status || p.Type != "about:blank" || p.Title == "" || p.Detail == "" {
		t.Fatalf("expect a problem with status %d, a title and a detail, got %+v", a.status, p)
	}
	return p.Detail
}
