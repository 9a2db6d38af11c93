package receipts

import (
	"net/http"
	"sync"
	"testing"
	"time"
)

// TestFaults: each injected fault, then the calls after it, with one key
// and one body.
func TestFaults(t *testing.T) {
	type step struct {
		wantStatus int // 0: no answer (the client errs)
		wantFault  string
		wantIssued bool // a receipt is recorded for the call
	}
	for _, tc := range []struct {
		name       string
		inject     func(*Server)
		steps      []step
		wantIssued int
	}{
		{"fail twice with 503", func(s *Server) { s.FailNext(2, 503) },
			[]step{{503, "fail", false}, {503, "fail", false}, {201, "", true}, {200, "", true}}, 1},
		{"fail with a status that is no error: 500", func(s *Server) { s.FailNext(1, 200) },
			[]step{{500, "fail", false}, {201, "", true}}, 1},
		{"fail cancelled", func(s *Server) { s.FailNext(3, 503); s.FailNext(0, 503) },
			[]step{{201, "", true}}, 1},
		{"hang once", func(s *Server) { s.HangNext(1) },
			[]step{{0, "hang", false}, {201, "", true}}, 1},
		{"drop the answer once: issued, then replayed", func(s *Server) { s.DropAnswerNext(1) },
			[]step{{0, "drop", true}, {200, "", true}}, 1},
		{"drop cancelled", func(s *Server) { s.DropAnswerNext(2); s.DropAnswerNext(0) },
			[]step{{201, "", true}}, 1},
		{"hangs first, then failures, then drops", func(s *Server) { s.DropAnswerNext(1); s.FailNext(1, 503); s.HangNext(1) },
			[]step{{0, "hang", false}, {503, "fail", false}, {0, "drop", true}, {200, "", true}}, 1},
		{"reset forgets the faults", func(s *Server) {
			s.HangNext(1)
			s.FailNext(1, 503)
			s.DropAnswerNext(1)
			s.SetLatency(time.Hour)
			s.Reset()
		},
			[]step{{201, "", true}}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := startTest(t)
			tc.inject(s)
			var first string
			for i, st := range tc.steps {
				a, err := call(t, freshClient(300*time.Millisecond), s.URL(), "k", credit1("m"))
				if st.wantStatus == 0 {
					if err == nil {
						t.Fatalf("step %d: expect no answer, got %+v", i, a)
					}
					// The service sees the client go; until then the key
					// is in flight, and a retry would be a 409.
					waitInFlight(t, s, "k", 0)
					waitCalls(t, s, i+1)
				} else if err != nil || a.status != st.wantStatus {
					t.Fatalf("step %d: expect %d, got %+v %v", i, st.wantStatus, a, err)
				}
				c := s.Calls()[i]
				if c.Status != st.wantStatus || c.Fault != st.wantFault || (c.Receipt != "") != st.wantIssued {
					t.Errorf("step %d: expect call status %d fault %q receipt %v, got %+v", i, st.wantStatus, st.wantFault, st.wantIssued, c)
				}
				if first == "" {
					first = c.Receipt
				}
				if c.Receipt != "" && c.Receipt != first {
					t.Errorf("step %d: expect the one receipt %q, got %q", i, first, c.Receipt)
				}
			}
			if s.Issued() != tc.wantIssued || s.MaxInFlight() != 1 {
				t.Errorf("expect Issued %d, MaxInFlight 1, got %d, %d", tc.wantIssued, s.Issued(), s.MaxInFlight())
			}
		})
	}
}

// waitCalls waits until n calls are recorded: a call is recorded as it
// ends, which for one without an answer is after the client has seen it.
func waitCalls(t *testing.T, s *Server, n int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for len(s.Calls()) < n {
		if time.Now().After(deadline) {
			t.Fatalf("expect %d call(s) recorded, got %d", n, len(s.Calls()))
		}
		time.Sleep(time.Millisecond)
	}
}

func TestLatency(t *testing.T) {
	for _, d := range []time.Duration{0, 50 * time.Millisecond, 150 * time.Millisecond} {
		t.Run(d.String(), func(t *testing.T) {
			s := startTest(t)
			s.SetLatency(d)
			begin := time.Now()
			if a := mustCall(t, s.URL(), "k", credit1("m")); a.status != 201 {
				t.Fatalf("expect 201, got %+v", a)
			}
			if took := time.Since(begin); took < d {
				t.Errorf("expect the call to take %v or more, took %v", d, took)
			}
			if c := s.Calls()[0]; c.End.Sub(c.Start) < d {
				t.Errorf("expect the call recorded as %v or more, got %v", d, c.End.Sub(c.Start))
			}
		})
	}
}

// TestCloseEndsHungCalls: Close ends a hung call without an answer and
// returns once it is recorded.
func TestCloseEndsHungCalls(t *testing.T) {
	s, err := Start("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s.HangNext(2)
	var wg sync.WaitGroup
	for _, key := range []string{"k1", "k2"} {
		wg.Go(func() {
			if a, err := call(t, freshClient(time.Minute), s.URL(), key, credit1("m")); err == nil {
				t.Errorf("expect no answer, got %+v", a)
			}
		})
		waitInFlight(t, s, key, 1)
	}
	done := make(chan error, 1)
	go func() { done <- s.Close() }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Close: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Close still waits on the hung calls")
	}
	wg.Wait()
	if calls := s.Calls(); len(calls) != 2 || calls[0].Fault != "hang" || calls[1].Status != 0 || s.Issued() != 0 {
		t.Errorf("expect 2 hung calls recorded, nothing issued, got %+v, Issued %d", calls, s.Issued())
	}
	if err := s.Close(); err != nil {
		t.Errorf("a second Close: %v", err)
	}
	if _, err := http.Post(s.URL(), "application/json", nil); err == nil {
		t.Error("expect the closed service to refuse connections")
	}
}

// TestResetKeepsReceiptsUnique: Reset forgets keys and counts, but a
// receipt issued after it is still new.
func TestResetKeepsReceiptsUnique(t *testing.T) {
	s := startTest(t)
	before := mustCall(t, s.URL(), "k", credit1("m"))
	s.Reset()
	if st := s.Stats(); st.Calls != 0 || st.Issued != 0 || st.MaxInFlight != 0 {
		t.Errorf("after Reset: expect zero stats, got %+v", st)
	}
	if _, ok := s.Receipt("k"); ok {
		t.Error("after Reset: expect the key forgotten")
	}
	after := mustCall(t, s.URL(), "k", credit1("m"))
	if after.status != 201 || after.receipt == before.receipt {
		t.Errorf("after Reset: expect 201 with a new receipt, got %+v (before %q)", after, before.receipt)
	}
}

// TestDropOnAReusedConnection records what a Go client does when an
// answer is lost on a kept-alive connection: net/http resends a request
// that has an Idempotency-Key header by itself, and the replay answers.
// The caller sees one 200, the service two calls.
func TestDropOnAReusedConnection(t *testing.T) {
	s := startTest(t)
	client := &http.Client{Timeout: 10 * time.Second}
	if a, err := call(t, client, s.URL(), "warm", credit1("w")); err != nil || a.status != 201 {
		t.Fatalf("expect 201, got %+v %v", a, err)
	}
	s.DropAnswerNext(1)
	a, err := call(t, client, s.URL(), "k", credit1("m"))
	if err != nil || a.status != 200 || !a.replayed {
		t.Fatalf("expect net/http's own retry to get the replay, 200, got %+v %v", a, err)
	}
	calls := s.Calls()
	if len(calls) != 3 || calls[1].Fault != "drop" || calls[2].Receipt != calls[1].Receipt || s.Issued() != 2 {
		t.Errorf("expect the dropped call and its replay, one receipt, got %+v, Issued %d", calls, s.Issued())
	}
}
