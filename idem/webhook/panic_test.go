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

type panickingVerifier struct{}

func (panickingVerifier) Verify(webhook.Header, []byte) error { panic("boom") }

// TestCallbackPanicsFailOneDelivery: a panic in any callback the Receiver
// calls stays inside HandleV2 and HandleV1: a 500 whose detail shows no
// internals, one log line and one metric, Failed, naming the callback, and
// nothing committed.
func TestCallbackPanicsFailOneDelivery(t *testing.T) {
	rejecting := func(accounts string) webhook.Handler {
		return func(context.Context, webhook.Request) (webhook.Response, idem.Effect, error) {
			w := creditWrite(accounts, "acc-9", 500, expression.AttributeExists(expression.Name("account"))) // acc-9 does not exist
			return webhook.Response{}, idem.Effect{
				Writes:   []types.TransactWriteItem{w},
				Rejected: webhook.Reject(func(*idem.RejectedError) webhook.Response { panic("boom") }),
			}, nil
		}
	}
	for _, tc := range []struct {
		callback string // as the PanicError names it
		opt      func(*webhook.Options)
		handler  func(accounts string) webhook.Handler
	}{
		{"webhook.Options.Verifier", func(o *webhook.Options) { o.Verifier = panickingVerifier{} }, creditHandler},
		{"webhook.Options.Key", func(o *webhook.Options) {
			o.Key = func(webhook.Header, []byte) (string, error) { panic("boom") }
		}, creditHandler},
		{"webhook.Options.Fingerprint", func(o *webhook.Options) {
			o.Fingerprint = func(webhook.Request) (string, error) { panic("boom") }
		}, creditHandler},
		{"Effect.Rejected", func(*webhook.Options) {}, rejecting},
		{"the handler", func(*webhook.Options) {}, func(string) webhook.Handler {
			return func(context.Context, webhook.Request) (webhook.Response, idem.Effect, error) { panic("boom") }
		}},
	} {
		for format, send := range map[string]func(*testing.T, *webhook.Receiver, delivery) answer{"v2": sendV2, "v1": sendV1} {
			t.Run(tc.callback+" "+format, func(t *testing.T) {
				e := newEnv(t)
				r, err := webhook.New(e.store, tc.handler(e.Accounts), tc.opt)
				if err != nil {
					t.Fatal(err)
				}
				a := send(t, r, delivery{body: creditBody, headers: keyed("k-1")})
				if a.status != 500 {
					t.Fatalf("expect 500, got %d %s", a.status, a.body)
				}
				if d := problemDetail(t, a); strings.Contains(d, "boom") || strings.Contains(d, "panic") || !strings.Contains(d, "nothing was applied") {
					t.Errorf("expect a generic detail saying nothing was applied, got %q", d)
				}
				logged := e.logged(t)
				if len(logged) != 1 || logged[0]["outcome"] != "Failed" || logged[0]["level"] != "WARN" {
					t.Fatalf("expect one WARN line, Failed, got %v", logged)
				}
				if msg, _ := logged[0]["error"].(string); !strings.Contains(msg, tc.callback+" panicked: boom") || logged[0]["stack"] == nil {
					t.Errorf("expect the error to name %s, with the stack, got %q", tc.callback, msg)
				}
				if counts, lines := e.counted(t); lines != 1 || counts[idem.Failed] != 1 {
					t.Errorf("expect one metric line, Failed, got %d line(s): %v", lines, counts)
				}
				if n, b := e.Claims(t), e.Balance(t, "acc-9"); n != 0 || b != 0 {
					t.Errorf("expect no claim and no credit, got %d claim(s) and a balance of %d", n, b)
				}
				t.Logf("%d %s; logged %s", a.status, a.body, logged[0]["error"])
			})
		}
	}
}

// badError is an error whose Error method panics, as a nil pointer's may.
type badError struct{ why *string }

func (e *badError) Error() string { return *e.why }

type badErrorVerifier struct{}

func (badErrorVerifier) Verify(webhook.Header, []byte) error { return &badError{} }

// TestCallbackErrorWhoseTextPanics: a verifier's error whose Error method
// panics is still a 401 that names it, not a crash.
func TestCallbackErrorWhoseTextPanics(t *testing.T) {
	e := newEnv(t)
	r := e.receiver(t, func(o *webhook.Options) { o.Verifier = badErrorVerifier{} })
	a := sendV2(t, r, delivery{body: creditBody, headers: keyed("k-1")})
	if d := problemDetail(t, a); a.status != 401 || !strings.Contains(d, "its Error method panicked") {
		t.Errorf("want a 401 naming the bad error, got %d %q", a.status, d)
	}
}
