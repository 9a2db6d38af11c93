package receipts

import (
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"
)

// waitInFlight waits until n requests with key are being served.
func waitInFlight(t *testing.T, s *Server, key string, n int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for s.InFlight(key) != n {
		if time.Now().After(deadline) {
			t.Fatalf("expect %d request(s) with key %q in flight, got %d", n, key, s.InFlight(key))
		}
		time.Sleep(time.Millisecond)
	}
}

// TestConcurrentCallsOneKey: a call arriving while another with its key is
// in flight is refused with 409, as Stripe does, and issues nothing.
func TestConcurrentCallsOneKey(t *testing.T) {
	for _, tc := range []struct {
		name       string
		secondBody string
	}{
		{"same body", credit1("m")},
		{"another body", credit1("other")}, // 409 before any comparison
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := startTest(t)
			s.SetLatency(300 * time.Millisecond) // the first is in flight that long
			var first answer
			var wg sync.WaitGroup
			wg.Go(func() { first = mustCall(t, s.URL(), "k", credit1("m")) })
			waitInFlight(t, s, "k", 1)
			second := mustCall(t, s.URL(), "k", tc.secondBody)
			wg.Wait()
			if first.status != 201 || second.status != 409 || second.errType != "idempotency_error" {
				t.Errorf("expect 201 and 409 idempotency_error, got %+v and %+v", first, second)
			}
			// The 409 overlapped the first: MaxInFlight says so.
			if s.Issued() != 1 || s.MaxInFlight() != 2 || s.Stats().Conflicts != 1 {
				t.Errorf("expect Issued 1, MaxInFlight 2, Conflicts 1, got %d, %d, %+v", s.Issued(), s.MaxInFlight(), s.Stats())
			}
			// Once the first has ended, the key is free: a replay.
			if a := mustCall(t, s.URL(), "k", credit1("m")); a.status != 200 || a.receipt != first.receipt {
				t.Errorf("after the first: expect 200 %q, got %+v", first.receipt, a)
			}
		})
	}
}

// TestRacingCallsOneKey: calls with one key at once, however they
// interleave, issue one receipt; each is answered 201, 200 or 409.
func TestRacingCallsOneKey(t *testing.T) {
	for _, n := range []int{2, 8, 32} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			s := startTest(t)
			client := &http.Client{Timeout: 10 * time.Second}
			answers := make([]answer, n)
			var wg sync.WaitGroup
			for i := range n {
				wg.Go(func() {
					a, err := call(t, client, s.URL(), "k", credit1("m"))
					if err != nil {
						t.Error(err)
					}
					answers[i] = a
				})
			}
			wg.Wait()
			counts := map[int]int{}
			for _, a := range answers {
				counts[a.status]++
				if r, _ := s.Receipt("k"); (a.status == 201 || a.status == 200) && a.receipt != r {
					t.Errorf("expect receipt %q, got %q", r, a.receipt)
				}
			}
			if counts[201] != 1 || counts[201]+counts[200]+counts[409] != n || s.Issued() != 1 {
				t.Errorf("expect one 201, the rest 200 or 409, one receipt issued; got %v, Issued %d", counts, s.Issued())
			}
			if counts[409] > 0 && s.MaxInFlight() < 2 {
				t.Errorf("expect MaxInFlight of 2 or more with %d conflicts, got %d", counts[409], s.MaxInFlight())
			}
		})
	}
}

// TestManyKeysAtOnce: calls with distinct keys never conflict, and each
// gets a receipt of its own.
func TestManyKeysAtOnce(t *testing.T) {
	const n = 50
	s := startTest(t)
	s.SetLatency(20 * time.Millisecond)
	client := &http.Client{Timeout: 10 * time.Second}
	receipts := make([]string, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			a, err := call(t, client, s.URL(), fmt.Sprintf("k-%d", i), credit1(fmt.Sprint(i)))
			if err != nil || a.status != 201 {
				t.Errorf("key k-%d: expect 201, got %+v %v", i, a, err)
			}
			receipts[i] = a.receipt
		})
	}
	wg.Wait()
	seen := map[string]bool{}
	for _, r := range receipts {
		if seen[r] {
			t.Errorf("receipt %q issued twice", r)
		}
		seen[r] = true
	}
	if st := s.Stats(); st.Issued != n || st.MaxInFlight != 1 || st.Calls != n || st.Conflicts != 0 || st.InFlight != 0 {
		t.Errorf("expect %d issued and calls, MaxInFlight 1, no conflict, none in flight, got %+v", n, st)
	}
}
