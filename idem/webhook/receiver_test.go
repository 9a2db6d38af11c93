package webhook_test

import (
	"context"
	"errors"
	"log/slog"
	"maps"
	"net/http"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemkit/kit/idem"
	"github.com/idemkit/kit/idem/idemtest"
	"github.com/idemkit/kit/idem/webhook"
)

const (
	creditBody = `{"id":"evt_001","account":"acc-9","cents":500}`
	secret     = "test-secret"
)

func keyed(key string) map[string]string { return map[string]string{"Idempotency-Key": key} }

func TestRedeliveriesReplayTheFirstResponse(t *testing.T) {
	e := newEnv(t)
	r := e.receiver(t)
	d := delivery{body: creditBody, headers: keyed("k-1")}
	first := sendV2(t, r, d)
	if first.status != 200 || first.body != `{"id":"k-1","status":"processed"}` {
		t.Fatalf("first delivery: expect 200 processed, got %d %s", first.status, first.body)
	}
	if _, ok := first.headers["Idempotent-Replayed"]; ok {
		t.Errorf("first delivery: expect no Idempotent-Replayed header, got %v", first.headers)
	}
	want := maps.Clone(first.headers)
	want["Idempotent-Replayed"] = "true"
	for i := range 4 {
		got := sendV2(t, r, d)
		if got.status != first.status || got.body != first.body || !reflect.DeepEqual(got.headers, want) {
			t.Errorf("redelivery %d: expect %d %v %q, got %d %v %q", i, first.status, want, first.body, got.status, got.headers, got.body)
		}
	}
	if got := e.Balance(t, "acc-9"); got != 500 {
		t.Errorf("expect one credit of 500, got a balance of %d", got)
	}
}

// TestKeyOuterSpacesAreNoPart: a header value's outer spaces and tabs
// are no part of it (RFC 9110), so " k", "k " and "k" are one key: one
// credit.
func TestKeyOuterSpacesAreNoPart(t *testing.T) {
	e := newEnv(t)
	r := e.receiver(t)
	for _, key := range []string{"k-1", " k-1", "k-1 ", "\tk-1", `"k-1" `} {
		if a := sendV2(t, r, delivery{body: creditBody, headers: keyed(key)}); a.status != 200 {
			t.Fatalf("key %q: %d %s", key, a.status, a.body)
		}
	}
	if got := e.Balance(t, "acc-9"); got != 500 {
		t.Errorf("want one credit of 500, got %d", got)
	}
}

// TestConcurrentDeliveriesApplyOnce releases five deliveries of one credit
// together in one process: one commits; by default each other is answered
// 409 with Retry-After while the first is in flight, or its response once
// it is done; with InFlightWait every other waits and gets its response.
func TestConcurrentDeliveriesApplyOnce(t *testing.T) {
	for _, tc := range []struct {
		name string
		wait time.Duration
	}{{"default", 0}, {"InFlightWait", 10 * time.Second}} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			r := e.receiver(t, func(o *webhook.Options) { o.InFlightWait = tc.wait })
			ev := delivery{body: creditBody, headers: keyed("k-1")}.v2()
			answers := make([]events.APIGatewayV2HTTPResponse, 5)
			start := make(chan struct{})
			var wg sync.WaitGroup
			for i := range answers {
				wg.Go(func() {
					<-start
					answers[i], _ = r.HandleV2(context.Background(), ev)
				})
			}
			close(start)
			wg.Wait()
			n := map[string]int{}
			for i, a := range answers {
				switch {
				case a.StatusCode == 200 && a.Body == `{"id":"k-1","status":"processed"}` && a.Headers["Idempotent-Replayed"] == "true":
					n["replayed"]++
				case a.StatusCode == 200 && a.Body == `{"id":"k-1","status":"processed"}`:
					n["first"]++
				case a.StatusCode == 409 && a.Headers["Retry-After"] == "1" && tc.wait == 0:
					n["409"]++
				default:
					t.Errorf("delivery %d: got %d %v %s", i, a.StatusCode, a.Headers, a.Body)
				}
			}
			t.Logf("answers: %v", n)
			if n["first"] != 1 || tc.wait > 0 && n["replayed"] != 4 {
				t.Errorf("want one first answer and, with a wait, 4 replayed; got %v", n)
			}
			if got := e.Balance(t, "acc-9"); got != 500 {
				t.Errorf("expect one credit of 500, got a balance of %d", got)
			}
		})
	}
}

func TestKeyReusedWithAnotherPayloadIs422(t *testing.T) {
	e := newEnv(t)
	r := e.receiver(t)
	if a := sendV2(t, r, delivery{body: creditBody, headers: keyed("k-1")}); a.status != 200 {
		t.Fatalf("first delivery: expect 200, got %d %s", a.status, a.body)
	}
	a := sendV2(t, r, delivery{body: `{"account":"acc-9","cents":900}`, headers: keyed("k-1")})
	if a.status != http.StatusUnprocessableEntity {
		t.Fatalf("expect 422, got %d %s", a.status, a.body)
	}
	if d := problemDetail(t, a); !strings.Contains(d, `"k-1"`) {
		t.Errorf("expect the detail to name the key, got %q", d)
	}
	if got := e.Balance(t, "acc-9"); got != 500 {
		t.Errorf("expect the balance to stay 500, got %d", got)
	}
}

func TestRefusalsApplyNothing(t *testing.T) {
	signed := func(body string, h map[string]string) map[string]string {
		h = maps.Clone(h)
		h["X-Signature"] = idemtest.HMACSignature(secret, []byte(body))
		return h
	}
	big := `{"account":"acc-9","cents":1,"pad":"` + strings.Repeat("x", 300<<10) + `"}`
	for _, tc := range []struct {
		name   string
		d      delivery
		status int
		detail string
	}{
		{"missing key", delivery{body: `{"account":"acc-9","cents":500}`}, 400, "no Idempotency-Key"},
		{"body key not a string", delivery{body: `{"id":7,"account":"acc-9","cents":500}`}, 400, `"id" field is not a string`},
		{"empty key", delivery{body: creditBody, headers: keyed(`""`)}, 400, "empty"},
		{"key too long", delivery{body: creditBody, headers: keyed(strings.Repeat("k", 256))}, 400, "256 bytes"},
		{"key with a control character", delivery{body: creditBody, headers: keyed("k\x01")}, 400, "control"},
		{"key with a non-ASCII character", delivery{body: creditBody, headers: keyed("clé")}, 400, "non-ASCII"},
		{"key badly quoted", delivery{body: creditBody, headers: keyed(`"a"b"`)}, 400, "unescaped"},
		{"malformed JSON", delivery{body: `{"account":"acc-9",`, headers: keyed("k")}, 400, "not one valid JSON value"},
		{"empty body", delivery{body: ``, headers: keyed("k")}, 400, "empty"},
		{"invalid UTF-8", delivery{body: "{\"account\":\"acc-\xff\",\"cents\":500}", headers: keyed("k")}, 400, "UTF-8"},
		{"trailing data", delivery{body: creditBody + `{}`, headers: keyed("k")}, 400, "after top-level value"},
		{"zero cents", delivery{body: `{"account":"acc-9","cents":0}`, headers: keyed("k")}, 400, `"cents"`},
		{"fractional cents", delivery{body: `{"account":"acc-9","cents":1.5}`, headers: keyed("k")}, 400, `"cents"`},
		{"bad base64", delivery{body: creditBody, headers: keyed("k")}, 400, "base64"},
		{"oversize", delivery{body: big, headers: keyed("k")}, 413, "larger than 262144 bytes"},
		{"oversize base64", delivery{body: big, headers: keyed("k"), base64: true}, 413, "larger than"},
		{"unsigned", delivery{body: creditBody, headers: keyed("k")}, 401, "no X-Signature header"},
		{"wrongly signed", delivery{body: creditBody, headers: signed(`{"other":1}`, keyed("k"))}, 401, "matches no configured secret"},
		{"malformed signature", delivery{body: creditBody, headers: map[string]string{"Idempotency-Key": "k", "X-Signature": "sha1=00"}}, 401, "sha256=<64 hex digits>"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			r := e.receiver(t, func(o *webhook.Options) {
				o.Key = webhook.IdempotencyKey("id")
				if tc.status == 401 {
					o.Verifier = &webhook.HMACVerifier{Secrets: []string{secret}}
				}
			})
			ev := tc.d.v2()
			if tc.name == "bad base64" {
				ev.IsBase64Encoded = true // the body is plain JSON: not base64
			}
			resp, _ := r.HandleV2(context.Background(), ev)
			a := decodeAnswer(t, resp.StatusCode, resp.Headers, resp.Body, resp.IsBase64Encoded)
			if a.status != tc.status {
				t.Fatalf("expect %d, got %d %s", tc.status, a.status, a.body)
			}
			if d := problemDetail(t, a); !strings.Contains(d, tc.detail) {
				t.Errorf("expect the detail to say %q, got %q", tc.detail, d)
			}
			if n, b := e.Claims(t), e.Balance(t, "acc-9"); n != 0 || b != 0 {
				t.Errorf("expect no claim and no credit, got %d claim(s) and a balance of %d", n, b)
			}
			// Refusals before the claim are the sender's fault (Refused);
			// a payload the handler rejects failed its processing (Failed).
			want := `"outcome":"Refused"`
			if strings.Contains(tc.name, "cents") {
				want = `"outcome":"Failed"`
			}
			if !strings.Contains(e.log.String(), want) {
				t.Errorf("expect the refusal logged with %s, got log %q", want, e.log.String())
			}
			if strings.Contains(e.log.String(), secret) {
				t.Errorf("the log holds the secret: %q", e.log.String())
			}
		})
	}
}

func TestSignedDeliveryIsAccepted(t *testing.T) {
	e := newEnv(t)
	r := e.receiver(t, func(o *webhook.Options) {
		o.Verifier = &webhook.HMACVerifier{Secrets: []string{"old-secret", secret}}
	})
	h := keyed("k-1")
	h["x-signature"] = idemtest.HMACSignature(secret, []byte(creditBody))
	if a := sendV2(t, r, delivery{body: creditBody, headers: h}); a.status != 200 {
		t.Fatalf("expect 200 with the second secret, got %d %s", a.status, a.body)
	}
}

func TestBase64DeliveryIsTheSamePayload(t *testing.T) {
	e := newEnv(t)
	r := e.receiver(t)
	plain := sendV2(t, r, delivery{body: creditBody, headers: keyed("k-1")})
	encoded := sendV2(t, r, delivery{body: creditBody, headers: keyed("k-1"), base64: true})
	if plain.status != 200 || encoded.status != 200 || encoded.body != plain.body || encoded.headers["Idempotent-Replayed"] != "true" {
		t.Fatalf("expect the base64 delivery to replay %d %s, got %d %v %s", plain.status, plain.body, encoded.status, encoded.headers, encoded.body)
	}
	if got := e.Balance(t, "acc-9"); got != 500 {
		t.Errorf("expect one credit of 500, got %d", got)
	}
}

// TestPayloadFormatsAgree sends one sequence of deliveries in each payload
// format and expects the same answers.
func TestPayloadFormatsAgree(t *testing.T) {
	seq := []delivery{
		{body: creditBody, headers: keyed("k-1")},
		{body: creditBody, headers: keyed("k-1")},
		{body: creditBody, headers: keyed("k-1"), base64: true},
		{body: `{"account":"acc-9","cents":7}`, headers: keyed("k-1")},
		{body: `{"account":"acc-9","cents":7}`, headers: map[string]string{"IDEMPOTENCY-KEY": `"k-2"`}},
		{body: `{"account":"acc-9"}`, headers: keyed("k-3")},
		{body: creditBody},
	}
	formats := map[string]func(*testing.T, *webhook.Receiver, delivery) answer{"v2": sendV2, "v1": sendV1}
	got := map[string][]answer{}
	for name, send := range formats {
		t.Run(name, func(t *testing.T) {
			e := newEnv(t)
			r := e.receiver(t)
			for _, d := range seq {
				got[name] = append(got[name], send(t, r, d))
			}
			if b := e.Balance(t, "acc-9"); b != 507 {
				t.Errorf("expect a balance of 507, got %d", b)
			}
		})
	}
	if !reflect.DeepEqual(got["v1"], got["v2"]) {
		t.Errorf("expect the same answers, got\nv1 %v\nv2 %v", got["v1"], got["v2"])
	}
	for i, want := range []int{200, 200, 200, 422, 200, 400, 400} {
		if a := got["v2"][i]; a.status != want {
			t.Errorf("delivery %d: expect %d, got %d %s", i, want, a.status, a.body)
		}
	}
}

func TestHeadersMatchCaseInsensitively(t *testing.T) {
	body := []byte(creditBody)
	for _, tc := range []struct {
		name  string
		send  func(*testing.T, *webhook.Receiver, delivery) answer
		key   string
		sig   string
		multi bool
	}{
		{"v2 lower case", sendV2, "idempotency-key", "x-signature", false},
		{"v2 upper case", sendV2, "IDEMPOTENCY-KEY", "X-SIGNATURE", false},
		{"v1 canonical", sendV1, "Idempotency-Key", "X-Signature", false},
		{"v1 mixed case", sendV1, "idempotency-KEY", "x-Signature", false},
		{"v1 multi-value headers only", sendV1, "idempotency-key", "X-SIGNATURE", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			r := e.receiver(t, func(o *webhook.Options) { o.Verifier = &webhook.HMACVerifier{Secrets: []string{secret}} })
			h := map[string]string{tc.key: "k-1", tc.sig: idemtest.HMACSignature(secret, body)}
			var a answer
			if tc.multi {
				ev := delivery{body: creditBody, headers: h}.v1()
				ev.Headers = nil
				resp, _ := r.HandleV1(context.Background(), ev)
				a = decodeAnswer(t, resp.StatusCode, resp.Headers, resp.Body, resp.IsBase64Encoded)
			} else {
				a = tc.send(t, r, delivery{body: creditBody, headers: h})
			}
			if a.status != 200 || a.body != `{"id":"k-1","status":"processed"}` {
				t.Fatalf("expect 200 for key k-1, got %d %s", a.status, a.body)
			}
		})
	}
}

func TestRejectionsAreRecordedOrRefused(t *testing.T) {
	e := newEnv(t)
	// The account must exist: acc-9 does not, so the condition fails.
	handler := func(record bool) webhook.Handler {
		return func(ctx context.Context, req webhook.Request) (webhook.Response, idem.Effect, error) {
			w := creditWrite(e.Accounts, "acc-9", 500, expression.AttributeExists(expression.Name("account")))
			eff := idem.Effect{Writes: []types.TransactWriteItem{w}}
			if record {
				eff.Rejected = webhook.Reject(func(*idem.RejectedError) webhook.Response {
					return webhook.Response{Status: 402, Headers: map[string]string{"X-Reason": "no account"}, Body: []byte("no such account")}
				})
			}
			return webhook.Response{Body: []byte("credited")}, eff, nil
		}
	}
	recorded, err := webhook.New(e.store, handler(true))
	if err != nil {
		t.Fatal(err)
	}
	first := sendV2(t, recorded, delivery{body: creditBody, headers: keyed("k-1")})
	again := sendV2(t, recorded, delivery{body: creditBody, headers: keyed("k-1")})
	if first.status != 402 || first.body != "no such account" || first.headers["X-Reason"] != "no account" {
		t.Errorf("recorded rejection: expect the handler's 402, got %d %v %s", first.status, first.headers, first.body)
	}
	if again.status != 402 || again.body != first.body || again.headers["Idempotent-Replayed"] != "true" {
		t.Errorf("recorded rejection: expect the 402 replayed, got %d %v %s", again.status, again.headers, again.body)
	}
	refused, err := webhook.New(e.store, handler(false))
	if err != nil {
		t.Fatal(err)
	}
	if a := sendV2(t, refused, delivery{body: creditBody, headers: keyed("k-2")}); a.status != http.StatusConflict {
		t.Errorf("unrecorded rejection: expect 409, got %d %s", a.status, a.body)
	}
	if n, b := e.Claims(t), e.Balance(t, "acc-9"); n != 1 || b != 0 {
		t.Errorf("expect one claim (the recorded rejection) and no credit, got %d and %d", n, b)
	}
}

func TestServerSideFailures(t *testing.T) {
	e := newEnv(t)
	panicking := func(context.Context, webhook.Request) (webhook.Response, idem.Effect, error) { panic("boom") }
	failing := func(context.Context, webhook.Request) (webhook.Response, idem.Effect, error) {
		return webhook.Response{}, idem.Effect{}, errors.New("db password is hunter2")
	}
	missing, err := idem.New(e.Client, "no-such-table", func(o *idem.Options) { o.Logger = slog.New(slog.DiscardHandler) })
	if err != nil {
		t.Fatal(err)
	}
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	for _, tc := range []struct {
		name   string
		store  *idem.Store
		h      webhook.Handler
		ctx    context.Context
		status int
	}{
		{"handler panics", e.store, panicking, context.Background(), 500},
		{"handler fails", e.store, failing, context.Background(), 500},
		{"table missing", missing, creditHandler(e.Accounts), context.Background(), 500},
		{"transient", e.store, creditHandler(e.Accounts), cancelled, 503},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := webhook.New(tc.store, tc.h, func(o *webhook.Options) { o.RetryAfter = 1500e6 })
			if err != nil {
				t.Fatal(err)
			}
			resp, _ := r.HandleV2(tc.ctx, delivery{body: creditBody, headers: keyed("k-" + tc.name)}.v2())
			a := decodeAnswer(t, resp.StatusCode, resp.Headers, resp.Body, resp.IsBase64Encoded)
			if a.status != tc.status {
				t.Fatalf("expect %d, got %d %s", tc.status, a.status, a.body)
			}
			d := problemDetail(t, a)
			if strings.Contains(d, "hunter2") || strings.Contains(d, "boom") {
				t.Errorf("expect a generic detail, got %q", d)
			}
			// Nothing committed is known only for a 500 here; a 503 may
			// follow a commit.
			if said := strings.Contains(d, "nothing was applied"); said != (tc.status == 500) {
				t.Errorf("expect the detail to say nothing was applied: %v, got %q", tc.status == 500, d)
			}
			if ra := a.headers["Retry-After"]; tc.status == 503 && ra != "2" {
				t.Errorf("expect Retry-After 2 (1.5 s rounded up), got %q", ra)
			}
		})
	}
	if n, b := e.Claims(t), e.Balance(t, "acc-9"); n != 0 || b != 0 {
		t.Errorf("expect no claim and no credit, got %d and %d", n, b)
	}
}

func TestNewRefusesBadOptions(t *testing.T) {
	e := newEnv(t)
	h := creditHandler(e.Accounts)
	scoped := e.newStore(t, e.Client, func(o *idem.Options) { o.Scope = "billing" })
	source := func(s string) func(*webhook.Options) { return func(o *webhook.Options) { o.Source = s } }
	for _, tc := range []struct {
		name  string
		store *idem.Store
		h     webhook.Handler
		opt   func(*webhook.Options)
		want  string // in the error; "" for none
	}{
		{"nil store", nil, h, func(*webhook.Options) {}, "nil Store"},
		{"nil handler", e.store, nil, func(*webhook.Options) {}, "nil Handler"},
		{"negative size", e.store, h, func(o *webhook.Options) { o.MaxBodyBytes = -1 }, "MaxBodyBytes"},
		{"nil HMACVerifier", e.store, h, func(o *webhook.Options) { o.Verifier = (*webhook.HMACVerifier)(nil) }, "nil *HMACVerifier"},
		{"Source over 1,024 bytes", e.store, h, source(strings.Repeat("s", 1100)), "Options.Source: Source is 1100 bytes"},
		{"Source all spaces", e.store, h, source("   "), "Options.Source: Source is all spaces"},
		{"Source with a newline", e.store, h, source("stripe\n"), "Options.Source: Source \"stripe\\n\" has a control"},
		{"Source not ASCII", e.store, h, source("paiement-reçu"), "Options.Source: Source \"paiement-reçu\" has a control or non-ASCII"},
		{"Source with a # as the scope", e.store, h, source("billing#eu"), "Options.Source: source \"billing#eu\" holds a \"#\""},
		{"Source with a # beside a Scope", scoped, h, source("billing#eu"), ""},
		{"Source of 1,024 bytes", e.store, h, source(strings.Repeat("s", 1024)), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := webhook.New(tc.store, tc.h, tc.opt)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("expect no error, got %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("expect an error saying %q, got %v", tc.want, err)
			}
			if err != nil {
				t.Logf("%v", err)
			}
		})
	}
}

// TestCommitWithLostAnswerIs503: a commit whose answer never comes back
// may have applied the effect, so it is a 503 with Retry-After that does
// not say nothing was applied; the retry then gets the stored answer.
func TestCommitWithLostAnswerIs503(t *testing.T) {
	// A reset after the commit, and a 200 whose body is cut short: the SDK
	// retries the first (the same ClientRequestToken) but not the second,
	// which is no error of DynamoDB's and was answered 500 "nothing was
	// applied" before the hardening.
	for _, kind := range []idemtest.FaultKind{idemtest.FaultLostResponse, idemtest.FaultTruncatedResponse} {
		t.Run(string(kind), func(t *testing.T) { lostCommitIs503(t, kind) })
	}
}

func lostCommitIs503(t *testing.T, kind idemtest.FaultKind) {
	e := newEnv(t)
	faults := &idemtest.Faults{Rates: map[idemtest.FaultKind]float64{kind: 1}, Operations: []string{"TransactWriteItems"}}
	lossy := e.newStore(t, idemtest.Client(idemtest.Endpoint(t), faults.Option, func(o *dynamodb.Options) { o.RetryMaxAttempts = 2 }))
	d := delivery{body: creditBody, headers: keyed("k-1")}
	r, err := webhook.New(lossy, creditHandler(e.Accounts))
	if err != nil {
		t.Fatal(err)
	}
	a := sendV2(t, r, d)
	if a.status != 503 || a.headers["Retry-After"] != "1" {
		t.Fatalf("expect 503 with Retry-After 1, got %d %v %s", a.status, a.headers, a.body)
	}
	if detail := problemDetail(t, a); strings.Contains(detail, "nothing was applied") {
		t.Errorf("expect a detail that does not say nothing was applied, got %q", detail)
	}
	if n, b := e.Claims(t), e.Balance(t, "acc-9"); n != 1 || b != 500 {
		t.Fatalf("expect the lost commit applied (1 claim, 500), got %d and %d", n, b)
	}
	again := sendV2(t, e.receiver(t), d)
	if again.status != 200 || again.headers["Idempotent-Replayed"] != "true" || again.body != `{"id":"k-1","status":"processed"}` {
		t.Errorf("retry: expect the stored 200 replayed, got %d %v %s", again.status, again.headers, again.body)
	}
	if b := e.Balance(t, "acc-9"); b != 500 {
		t.Errorf("expect one credit of 500, got %d", b)
	}
	counts, _ := e.counted(t)
	t.Logf("lost answer: %d Retry-After %s %s (%d faults injected); retry: %d replayed; metrics %v", a.status, a.headers["Retry-After"], a.body, faults.Counts()[kind], again.status, counts)
}
