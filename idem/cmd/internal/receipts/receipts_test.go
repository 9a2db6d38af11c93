package receipts

import (
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestIdempotency runs Stripe's rules, each case a sequence of calls on a
// fresh service.
func TestIdempotency(t *testing.T) {
	type step struct {
		key, body    string
		wantStatus   int
		wantReplayed bool
		// sameAs is the step whose receipt this one must repeat, or -1
		// for a receipt of its own (when it has one).
		sameAs  int
		wantErr string // in the error's message
	}
	body := credit1("m-1")
	long := strings.Repeat("k", 255)
	for _, tc := range []struct {
		name       string
		steps      []step
		wantIssued int
	}{
		{"first call issues a receipt", []step{
			{"k1", body, 201, false, -1, ""},
		}, 1},
		{"same key and body replay the receipt", []step{
			{"k1", body, 201, false, -1, ""},
			{"k1", body, 200, true, 0, ""},
			{"k1", body, 200, true, 0, ""},
		}, 1},
		{"the same body written otherwise is the same", []step{
			{"k1", `{"id":"m-1","account":"acc-1","cents":500}`, 201, false, -1, ""},
			{"k1", ` { "cents": 500, "account": "acc-1", "id": "m-1" } `, 200, true, 0, ""},
		}, 1},
		{"same key with another body is refused", []step{
			{"k1", body, 201, false, -1, ""},
			{"k1", `{"id":"m-1","account":"acc-1","cents":501}`, 422, false, -1, "same parameters"},
			{"k1", `{"id":"m-1","account":"acc-2","cents":500}`, 422, false, -1, "same parameters"},
			{"k1", `{"id":"m-2","account":"acc-1","cents":500}`, 422, false, -1, "same parameters"},
			{"k1", body, 200, true, 0, ""},
		}, 1},
		{"other keys, other receipts", []step{
			{"k1", body, 201, false, -1, ""},
			{"k2", body, 201, false, -1, ""},
		}, 2},
		{"a key of 255 characters", []step{{long, body, 201, false, -1, ""}}, 1},
		{"a key of 256 characters", []step{{long + "k", body, 400, false, -1, "256 characters"}}, 0},
		{"no key", []step{{noKey, body, 400, false, -1, "Idempotency-Key header is required"}}, 0},
		{"not JSON", []step{{"k1", `id=1`, 400, false, -1, "not a JSON object"}}, 0},
		{"a JSON array", []step{{"k1", `[1]`, 400, false, -1, "not a JSON object"}}, 0},
		{"trailing data", []step{{"k1", body + `{}`, 400, false, -1, "not a JSON object"}}, 0},
		{"account missing", []step{{"k1", `{"id":"m","cents":5}`, 400, false, -1, "account is empty"}}, 0},
		{"account empty", []step{{"k1", `{"id":"m","account":"","cents":5}`, 400, false, -1, "account is empty"}}, 0},
		{"cents missing", []step{{"k1", `{"id":"m","account":"a"}`, 400, false, -1, "got none"}}, 0},
		{"cents zero", []step{{"k1", `{"id":"m","account":"a","cents":0}`, 400, false, -1, "positive integer"}}, 0},
		{"cents negative", []step{{"k1", `{"id":"m","account":"a","cents":-5}`, 400, false, -1, "positive integer"}}, 0},
		{"cents a fraction", []step{{"k1", `{"id":"m","account":"a","cents":1.5}`, 400, false, -1, "positive integer"}}, 0},
		{"cents a string", []step{{"k1", `{"id":"m","account":"a","cents":"5"}`, 400, false, -1, "positive integer"}}, 0},
		{"cents overflowing", []step{{"k1", `{"id":"m","account":"a","cents":9223372036854775808}`, 400, false, -1, "positive integer"}}, 0},
		{"a refused body saves nothing for its key", []step{
			{"k1", `{"account":"acc-1","cents":0}`, 400, false, -1, "positive integer"},
			{"k1", body, 201, false, -1, ""},
		}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := startTest(t)
			var got []answer
			for i, st := range tc.steps {
				a := mustCall(t, s.URL(), st.key, st.body)
				got = append(got, a)
				if a.status != st.wantStatus || a.replayed != st.wantReplayed {
					t.Errorf("step %d: expect %d replayed=%v, got %d replayed=%v (%s)", i, st.wantStatus, st.wantReplayed, a.status, a.replayed, a.errMsg)
				}
				if !strings.Contains(a.errMsg, st.wantErr) || (st.wantErr == "") != (a.errMsg == "") {
					t.Errorf("step %d: expect an error message with %q, got %q", i, st.wantErr, a.errMsg)
				}
				switch {
				case st.sameAs >= 0 && a.receipt != got[st.sameAs].receipt:
					t.Errorf("step %d: expect step %d's receipt %q, got %q", i, st.sameAs, got[st.sameAs].receipt, a.receipt)
				case st.sameAs < 0 && a.status == 201:
					for j, b := range got[:i] {
						if b.receipt == a.receipt {
							t.Errorf("step %d: expect a new receipt, got step %d's %q", i, j, a.receipt)
						}
					}
				case st.sameAs < 0 && a.status != 201 && a.receipt != "":
					t.Errorf("step %d: expect no receipt with %d, got %q", i, a.status, a.receipt)
				}
				if r, ok := s.Receipt(st.key); a.receipt != "" && (!ok || r != a.receipt) {
					t.Errorf("step %d: Receipt(key): expect %q, got %q %v", i, a.receipt, r, ok)
				}
			}
			if n := s.Issued(); n != tc.wantIssued {
				t.Errorf("Issued: expect %d, got %d", tc.wantIssued, n)
			}
			calls := s.Calls()
			if len(calls) != len(tc.steps) {
				t.Fatalf("Calls: expect %d, got %d", len(tc.steps), len(calls))
			}
			for i, c := range calls {
				if c.Status != got[i].status || c.Receipt != got[i].receipt || c.Body != tc.steps[i].body || c.End.Before(c.Start) {
					t.Errorf("call %d: expect status %d receipt %q body %q, got %+v", i, got[i].status, got[i].receipt, tc.steps[i].body, c)
				}
			}
			if m := s.MaxInFlight(); len(tc.steps) > 0 && tc.steps[0].key != noKey && len(tc.steps[0].key) <= 255 && m != 1 {
				t.Errorf("MaxInFlight: expect 1 for calls one after another, got %d", m)
			}
		})
	}
}

func TestOnlyPOST(t *testing.T) {
	s := startTest(t)
	for _, method := range []string{http.MethodGet, http.MethodPut, http.MethodDelete} {
		t.Run(method, func(t *testing.T) {
			req, _ := http.NewRequest(method, s.URL(), strings.NewReader(credit1("m")))
			req.Header.Set("Idempotency-Key", "k")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusMethodNotAllowed || resp.Header.Get("Allow") != "POST" {
				t.Errorf("expect 405 with Allow: POST, got %d %q", resp.StatusCode, resp.Header.Get("Allow"))
			}
		})
	}
	if s.Issued() != 0 {
		t.Errorf("Issued: expect 0, got %d", s.Issued())
	}
}

// TestKeyLifetime: a key is remembered for its lifetime from its receipt,
// then forgotten.
func TestKeyLifetime(t *testing.T) {
	for _, tc := range []struct {
		name     string
		lifetime time.Duration // 0: the default
		want     time.Duration // the lifetime in effect
	}{
		{"default, 24 hours as Stripe", 0, 24 * time.Hour},
		{"one minute", time.Minute, time.Minute},
	} {
		t.Run(tc.name, func(t *testing.T) {
			now := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
			var clock clockVar
			clock.set(now)
			s := startTest(t, func(o *Options) { o.Now, o.KeyLifetime = clock.now, tc.lifetime })
			first := mustCall(t, s.URL(), "k", credit1("m"))
			clock.set(now.Add(tc.want - time.Nanosecond))
			again := mustCall(t, s.URL(), "k", credit1("m"))
			if first.status != 201 || again.status != 200 || again.receipt != first.receipt {
				t.Fatalf("within the lifetime: expect 201 then 200 with one receipt, got %+v then %+v", first, again)
			}
			clock.set(now.Add(tc.want))
			if _, ok := s.Receipt("k"); ok {
				t.Errorf("Receipt: expect the key forgotten at the end of its lifetime")
			}
			later := mustCall(t, s.URL(), "k", credit1("other body: the key is new"))
			if later.status != 201 || later.receipt == first.receipt {
				t.Errorf("after the lifetime: expect 201 with a new receipt, got %+v (first %q)", later, first.receipt)
			}
			if s.Issued() != 2 {
				t.Errorf("Issued: expect 2, got %d", s.Issued())
			}
		})
	}
}
