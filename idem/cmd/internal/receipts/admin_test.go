package receipts

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

func admin(t *testing.T, s *Server, method, path string) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, s.AdminURL()+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

// TestAdminFaults: each admin endpoint sets what its Go method sets.
func TestAdminFaults(t *testing.T) {
	for _, tc := range []struct {
		name       string
		path       string
		wantStatus []int // of the calls after it; 0: no answer
		wantSlow   time.Duration
	}{
		{"fail", "/fail?n=2&status=503", []int{503, 503, 201}, 0},
		{"fail, 500 and once by default", "/fail", []int{500, 201}, 0},
		{"hang", "/hang?n=1", []int{0, 201}, 0},
		{"drop", "/drop", []int{0, 200}, 0},
		{"latency", "/latency?ms=80", []int{201}, 80 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := startTest(t)
			if code, b := admin(t, s, http.MethodPost, tc.path); code != http.StatusNoContent {
				t.Fatalf("POST %s: expect 204, got %d %s", tc.path, code, b)
			}
			for i, want := range tc.wantStatus {
				begin := time.Now()
				a, err := call(t, freshClient(300*time.Millisecond), s.URL(), "k", credit1("m"))
				if want == 0 {
					if err == nil {
						t.Fatalf("call %d: expect no answer, got %+v", i, a)
					}
					waitInFlight(t, s, "k", 0)
					continue
				}
				if err != nil || a.status != want {
					t.Fatalf("call %d: expect %d, got %+v %v", i, want, a, err)
				}
				if took := time.Since(begin); took < tc.wantSlow {
					t.Errorf("call %d: expect %v or more, took %v", i, tc.wantSlow, took)
				}
			}
		})
	}
}

func TestAdminRefusesBadParameters(t *testing.T) {
	s := startTest(t)
	for _, path := range []string{"/fail?status=200", "/fail?status=600", "/fail?n=-1", "/fail?n=x", "/hang?n=1.5", "/drop?n=-2", "/latency?ms=fast"} {
		t.Run(path, func(t *testing.T) {
			code, b := admin(t, s, http.MethodPost, path)
			var e apiError
			if code != http.StatusBadRequest || json.Unmarshal(b, &e) != nil || e.Error.Message == "" {
				t.Errorf("expect 400 with a JSON error, got %d %s", code, b)
			}
		})
	}
	if code, _ := admin(t, s, http.MethodGet, "/fail"); code != http.StatusMethodNotAllowed {
		t.Errorf("GET /fail: expect 405, got %d", code)
	}
	if a := mustCall(t, s.URL(), "k", credit1("m")); a.status != 201 {
		t.Errorf("expect no fault set by refused requests, got %+v", a)
	}
}

// TestAdminReadsAndResets: calls and stats as JSON, and reset.
func TestAdminReadsAndResets(t *testing.T) {
	s := startTest(t)
	if code, b := admin(t, s, http.MethodGet, "/calls"); code != 200 || strings.TrimSpace(string(b)) != "[]" {
		t.Errorf("GET /calls with no call: expect 200 [], got %d %s", code, b)
	}
	mustCall(t, s.URL(), "k1", credit1("m1"))
	mustCall(t, s.URL(), "k1", credit1("m1"))
	mustCall(t, s.URL(), "k2", credit1("m2"))

	code, b := admin(t, s, http.MethodGet, "/calls")
	var calls []Call
	if err := json.Unmarshal(b, &calls); code != 200 || err != nil {
		t.Fatalf("GET /calls: %d %s %v", code, b, err)
	}
	if len(calls) != 3 || calls[0].Key != "k1" || calls[0].Status != 201 || !calls[1].Replayed || calls[1].Receipt != calls[0].Receipt || calls[2].Body != credit1("m2") {
		t.Errorf("GET /calls: expect the three calls, got %+v", calls)
	}
	var st Stats
	code, b = admin(t, s, http.MethodGet, "/stats")
	if err := json.Unmarshal(b, &st); code != 200 || err != nil {
		t.Fatalf("GET /stats: %d %s %v", code, b, err)
	}
	if want := (Stats{Calls: 3, Issued: 2, MaxInFlight: 1}); st != want {
		t.Errorf("GET /stats: expect %+v, got %+v", want, st)
	}
	if code, _ := admin(t, s, http.MethodPost, "/reset"); code != http.StatusNoContent {
		t.Errorf("POST /reset: expect 204, got %d", code)
	}
	if st := s.Stats(); st != (Stats{}) {
		t.Errorf("after POST /reset: expect zero stats, got %+v", st)
	}
}
