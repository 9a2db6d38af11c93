package receipts

import (
	"net/http"
	"time"
)

// faults are the injected faults still to come, each for a number of calls.
type faults struct {
	hang, fail, drop int
	failStatus       int
}

// FailNext makes the next n calls answer status, an HTTP error status
// (400 to 599; any other is taken as 500), without issuing anything: a
// payment API that is down. n <= 0 cancels it.
func (s *Server) FailNext(n, status int) {
	if status < 400 || status > 599 {
		status = http.StatusInternalServerError
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.st.faults.fail, s.st.faults.failStatus = max(n, 0), status
}

// HangNext makes the next n calls wait, issuing nothing and never
// answering, until the client gives up or the service closes: a timeout
// whose request may or may not have been seen. n <= 0 cancels it.
func (s *Server) HangNext(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.st.faults.hang = max(n, 0)
}

// DropAnswerNext makes the next n calls do their work (a receipt is
// issued, or replayed) and then close the connection without an answer:
// an effect the caller cannot know about but must not repeat. n <= 0
// cancels it.
func (s *Server) DropAnswerNext(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.st.faults.drop = max(n, 0)
}

// SetLatency adds d to every call from now on, before it is answered; 0
// removes it.
func (s *Server) SetLatency(d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.st.latency = max(d, 0)
}

// Reset forgets every key, call, count and fault, and the latency, as a
// new service would; the receipts it issues stay unique. Requests in
// flight go on and are recorded when they end.
func (s *Server) Reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.st.keys, s.st.calls, s.st.issued = map[string]*entry{}, nil, 0
	s.st.faults, s.st.latency = faults{}, 0
	s.st.maxInFlight = 0
	for _, n := range s.st.inFlight {
		s.st.maxInFlight = max(s.st.maxInFlight, n)
	}
}

// fault is what a call meets.
type fault string

const (
	noFault   fault = ""
	faultHang fault = "hang"
	faultFail fault = "fail"
	faultDrop fault = "drop"
)

// takeFault takes the next call's fault, if any: hangs first, then
// failures, then dropped answers, when several are pending. For a failure
// it returns the status too.
func (s *Server) takeFault() (fault, int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f := &s.st.faults
	switch {
	case f.hang > 0:
		f.hang--
		return faultHang, 0
	case f.fail > 0:
		f.fail--
		return faultFail, f.failStatus
	case f.drop > 0:
		f.drop--
		return faultDrop, 0
	}
	return noFault, 0
}

func (s *Server) latency() time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.st.latency
}
