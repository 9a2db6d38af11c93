package receipts

import (
	"fmt"
	"slices"
	"strconv"
	"time"
)

// Call is one request to the receipts URL, as the service saw it.
type Call struct {
	// Key is the request's Idempotency-Key header.
	Key string `json:"key"`
	// Body is the request's body.
	Body string `json:"body"`
	// Status is the answer's HTTP status; 0 when no answer was sent (a
	// hang, a dropped answer, a client gone).
	Status int `json:"status"`
	// Receipt is the receipt issued or replayed, if any; a dropped answer
	// still has the receipt it issued.
	Receipt string `json:"receipt,omitempty"`
	// Replayed is true for an answer replayed from the key's first call.
	Replayed bool `json:"replayed,omitempty"`
	// Fault is the injected fault the call met: "fail", "hang", "drop",
	// or "" for none.
	Fault string `json:"fault,omitempty"`
	// Start and End are when the service began and finished serving it.
	Start time.Time `json:"start"`
	End   time.Time `json:"end"`
}

// Stats are the totals since Start or the last Reset.
type Stats struct {
	// Calls counts the requests to the receipts URL.
	Calls int `json:"calls"`
	// Issued counts the distinct receipts issued.
	Issued int `json:"issued"`
	// Conflicts counts the requests refused with 409: each overlapped
	// another with its key.
	Conflicts int `json:"conflicts"`
	// InFlight counts the requests being served now.
	InFlight int `json:"inFlight"`
	// MaxInFlight is the most requests in flight for any one key at the
	// same moment.
	MaxInFlight int `json:"maxInFlight"`
}

// state is what the service knows; Server.mu guards it.
type state struct {
	closed      bool
	keys        map[string]*entry // by Idempotency-Key
	inFlight    map[string]int    // by Idempotency-Key
	maxInFlight int
	calls       []Call
	issued      int
	seq         int // never reset, so that receipts stay unique
	faults      faults
	latency     time.Duration
}

// entry is a key's saved result.
type entry struct {
	receipt  string
	credit   credit
	issuedAt time.Time
}

func newState() state {
	return state{keys: map[string]*entry{}, inFlight: map[string]int{}}
}

// Calls returns every call since Start or the last Reset, in the order
// they ended.
func (s *Server) Calls() []Call {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.st.calls)
}

// Issued counts the distinct receipts issued since Start or the last Reset.
func (s *Server) Issued() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.st.issued
}

// MaxInFlight is the most requests in flight for any one key at the same
// moment since Start or the last Reset. A request refused with 409 counts:
// it overlapped another, which is what a caller holding a lease per key
// must never do, so 1 is the only good answer.
func (s *Server) MaxInFlight() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.st.maxInFlight
}

// InFlight counts the requests with key being served now.
func (s *Server) InFlight(key string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.st.inFlight[key]
}

// Receipt is the receipt issued for key, while the key is remembered.
func (s *Server) Receipt(key string) (string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.lookup(key)
	if e == nil {
		return "", false
	}
	return e.receipt, true
}

// Stats returns the totals since Start or the last Reset.
func (s *Server) Stats() Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := Stats{Calls: len(s.st.calls), Issued: s.st.issued, MaxInFlight: s.st.maxInFlight}
	for _, c := range s.st.calls {
		if c.Status == 409 {
			st.Conflicts++
		}
	}
	for _, n := range s.st.inFlight {
		st.InFlight += n
	}
	return st
}

// lookup is key's entry, forgetting it once its lifetime is over. The
// caller holds mu.
func (s *Server) lookup(key string) *entry {
	e := s.st.keys[key]
	if e != nil && !s.opts.Now().Before(e.issuedAt.Add(s.opts.KeyLifetime)) {
		delete(s.st.keys, key)
		return nil
	}
	return e
}

// arrive counts a request with key in flight and tells whether another
// one with the key already was.
func (s *Server) arrive(key string) (conflict bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	conflict = s.st.inFlight[key] > 0
	s.st.inFlight[key]++
	s.st.maxInFlight = max(s.st.maxInFlight, s.st.inFlight[key])
	return conflict
}

func (s *Server) depart(key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.st.inFlight[key]--; s.st.inFlight[key] <= 0 {
		delete(s.st.inFlight, key)
	}
}

func (s *Server) record(c Call) {
	s.mu.Lock()
	s.st.calls = append(s.st.calls, c)
	s.mu.Unlock()
	if s.opts.Logf != nil {
		s.opts.Logf("receipts: %s", c.line())
	}
}

// line is the call in a log line: its key, answer, fault and duration.
func (c Call) line() string {
	answer := "no answer"
	if c.Status != 0 {
		answer = strconv.Itoa(c.Status)
	}
	if c.Receipt != "" {
		answer += " " + c.Receipt
	}
	if c.Replayed {
		answer += " (replayed)"
	}
	if c.Fault != "" {
		answer += " (injected " + c.Fault + ")"
	}
	return fmt.Sprintf("POST key=%q → %s in %v", c.Key, answer, c.End.Sub(c.Start).Round(time.Millisecond))
}
