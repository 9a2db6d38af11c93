package webhook_test

import (
	"context"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemkit/kit/idem"
	"github.com/idemkit/kit/idem/webhook"
)

type jsonCredit struct {
	Account string `json:"account"`
	Cents   int64  `json:"cents"`
}

// jsonCredits is creditHandler through JSONHandler.
func jsonCredits(accounts string) webhook.Handler {
	return webhook.JSONHandler(func(_ context.Context, c jsonCredit, req webhook.Request) (webhook.Response, idem.Effect, error) {
		resp, err := webhook.JSON(200, map[string]string{"status": "processed", "id": req.Key})
		return resp, idem.Effect{Writes: []types.TransactWriteItem{creditWrite(accounts, c.Account, c.Cents)}}, err
	})
}

// TestJSONHandler: a body that decodes is credited once and replayed; one
// that does not is a 400 with the decoder's reason, counted as Failed, as
// any BadRequest is, with nothing committed.
func TestJSONHandler(t *testing.T) {
	for _, tc := range []struct {
		name, body string
		status     int
		detail     string // in the 400's detail
	}{
		{"decodes", `{"account":"acc-9","cents":500}`, 200, ""},
		{"cents a string", `{"account":"acc-9","cents":"500"}`, 400, "cannot unmarshal string into Go struct field jsonCredit.cents of type int64"},
		{"cents fractional", `{"account":"acc-9","cents":2.5}`, 400, "cannot unmarshal number 2.5"},
		{"cents overflowing", `{"account":"acc-9","cents":9223372036854775808}`, 400, "cannot unmarshal number 9223372036854775808"},
		{"an array", `[1,2]`, 400, "cannot unmarshal array into Go value of type webhook_test.jsonCredit"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			r, err := webhook.New(e.store, jsonCredits(e.Accounts))
			if err != nil {
				t.Fatal(err)
			}
			d := delivery{body: tc.body, headers: keyed("k-1")}
			a := sendV2(t, r, d)
			if a.status != tc.status {
				t.Fatalf("expect %d, got %d %s", tc.status, a.status, a.body)
			}
			counts, lines := e.counted(t)
			if tc.status == 200 {
				again := sendV2(t, r, d)
				if again.status != 200 || again.body != a.body || again.headers["Idempotent-Replayed"] != "true" {
					t.Errorf("expect the 200 replayed, got %d %v %s", again.status, again.headers, again.body)
				}
				if n, b := e.Claims(t), e.Balance(t, "acc-9"); n != 1 || b != 500 {
					t.Errorf("expect one claim and a balance of 500, got %d and %d", n, b)
				}
				return
			}
			if d := problemDetail(t, a); !strings.HasPrefix(d, "the body does not decode into the handler's type: json: ") || !strings.Contains(d, tc.detail) {
				t.Errorf("expect the detail to give the decoder's reason, %q, got %q", tc.detail, d)
			}
			if lines != 1 || counts[idem.Failed] != 1 {
				t.Errorf("expect one metric line, Failed, got %d line(s): %v", lines, counts)
			}
			if log := e.log.String(); !strings.Contains(log, tc.detail) {
				t.Errorf("expect the decoder's reason logged, got %q", log)
			}
			if n, b := e.Claims(t), e.Balance(t, "acc-9"); n != 0 || b != 0 {
				t.Errorf("expect no claim and no credit, got %d claim(s) and a balance of %d", n, b)
			}
		})
	}
	e := newEnv(t)
	if _, err := webhook.New(e.store, webhook.JSONHandler[jsonCredit](nil)); err == nil || !strings.Contains(err.Error(), "nil Handler") {
		t.Errorf("JSONHandler(nil): expect New to refuse a nil Handler, got %v", err)
	}
}

// TestHandlerMisuseCommitsNothing: a Handler that sets Effect.Response, or
// an Effect.Rejected whose bytes are not a Response from Reject, fails the
// delivery with a 500 that says nothing was applied, logged once as Failed
// with the reason, and nothing committed.
func TestHandlerMisuseCommitsNothing(t *testing.T) {
	for _, tc := range []struct {
		name   string
		h      func(accounts string) webhook.Handler
		reason string // in the logged error
	}{
		{"Effect.Response set", func(accounts string) webhook.Handler {
			return func(context.Context, webhook.Request) (webhook.Response, idem.Effect, error) {
				return webhook.Response{Body: []byte("ok")}, idem.Effect{
					Writes:   []types.TransactWriteItem{creditWrite(accounts, "acc-9", 500)},
					Response: []byte("ok"),
				}, nil
			}
		}, "set idem.Effect.Response"},
		{"Effect.Rejected without Reject", func(accounts string) webhook.Handler {
			return func(context.Context, webhook.Request) (webhook.Response, idem.Effect, error) {
				return webhook.Response{}, idem.Effect{
					Writes:   []types.TransactWriteItem{creditWrite(accounts, "acc-9", 500, expression.AttributeExists(expression.Name("account")))},
					Rejected: func(*idem.RejectedError) ([]byte, error) { return []byte("no such account"), nil },
				}, nil
			}
		}, "build it with webhook.Reject"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			r, err := webhook.New(e.store, tc.h(e.Accounts))
			if err != nil {
				t.Fatal(err)
			}
			a := sendV2(t, r, delivery{body: creditBody, headers: keyed("k-1")})
			if a.status != 500 {
				t.Fatalf("expect 500, got %d %s", a.status, a.body)
			}
			if d := problemDetail(t, a); !strings.Contains(d, "nothing was applied") {
				t.Errorf("expect a detail saying nothing was applied, got %q", d)
			}
			logged := e.logged(t)
			if len(logged) != 1 || logged[0]["outcome"] != "Failed" {
				t.Fatalf("expect one line, Failed, got %v", logged)
			}
			if msg, _ := logged[0]["error"].(string); !strings.Contains(msg, tc.reason) {
				t.Errorf("expect the error to say %q, got %q", tc.reason, msg)
			}
			if n, b := e.Claims(t), e.Balance(t, "acc-9"); n != 0 || b != 0 {
				t.Errorf("expect no claim and no credit, got %d claim(s) and a balance of %d", n, b)
			}
		})
	}
}
