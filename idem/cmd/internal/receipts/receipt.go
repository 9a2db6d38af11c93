package receipts

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"
	"unicode/utf8"
)

const (
	keyHeader      = "Idempotency-Key"
	replayedHeader = "Idempotent-Replayed"
	// maxKeyLen is Stripe's limit on an idempotency key, in characters.
	maxKeyLen = 255
	maxBody   = 1 << 20
)

// serveReceipt serves one POST to URL(). The order matters: a key is in
// flight from its arrival, so that a request overlapping another is seen
// even when it then fails; injected latency and faults come before any
// validation, as a slow or broken service is so for every request.
func (s *Server) serveReceipt(w http.ResponseWriter, r *http.Request) {
	if !s.enter() {
		panic(http.ErrAbortHandler)
	}
	defer s.handlers.Done()
	c := Call{Key: r.Header.Get(keyHeader), Start: s.opts.Now()}
	defer func() {
		c.End = s.opts.Now()
		s.record(c)
	}()
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		s.refuse(w, &c, http.StatusMethodNotAllowed, "invalid_request_error", "use POST")
		return
	}
	keyErr := checkKey(c.Key)
	conflict := false
	if keyErr == nil {
		conflict = s.arrive(c.Key)
		defer s.depart(c.Key)
	}
	// Read whole first: the server then watches the connection, and the
	// request's context ends when the client gives up.
	body, bodyErr := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
	c.Body = string(body)
	if !s.wait(r.Context(), s.latency()) {
		panic(http.ErrAbortHandler)
	}
	f, failStatus := s.takeFault()
	c.Fault = string(f)
	switch f {
	case faultHang:
		s.wait(r.Context(), -1)
		panic(http.ErrAbortHandler)
	case faultFail:
		s.refuse(w, &c, failStatus, "api_error", "injected failure (FailNext)")
		return
	}
	if keyErr != nil {
		s.refuse(w, &c, http.StatusBadRequest, "invalid_request_error", keyErr.Error())
		return
	}
	if conflict {
		s.refuse(w, &c, http.StatusConflict, "idempotency_error",
			"there is currently another in-progress request using this Idempotency-Key; retry later")
		return
	}
	if bodyErr != nil {
		s.refuse(w, &c, http.StatusBadRequest, "invalid_request_error", "reading the body: "+bodyErr.Error())
		return
	}
	cr, err := parseCredit(body)
	if err != nil {
		s.refuse(w, &c, http.StatusBadRequest, "invalid_request_error", err.Error())
		return
	}
	status, receipt, replayed := s.issue(c.Key, cr)
	c.Receipt, c.Replayed = receipt, replayed
	if f == faultDrop {
		panic(http.ErrAbortHandler)
	}
	if status == http.StatusUnprocessableEntity {
		s.refuse(w, &c, status, "idempotency_error",
			"keys for idempotent requests can only be used with the same parameters they were first used with")
		return
	}
	if replayed {
		w.Header().Set(replayedHeader, "true")
	}
	s.answer(w, &c, status, map[string]string{"receipt": receipt})
}

// issue applies a valid call: a new receipt for a new key, the saved one
// for the same credit, a refusal (422) for another.
func (s *Server) issue(key string, cr credit) (status int, receipt string, replayed bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if e := s.lookup(key); e != nil {
		if e.credit != cr {
			return http.StatusUnprocessableEntity, "", false
		}
		return http.StatusOK, e.receipt, true
	}
	s.st.seq++
	s.st.issued++
	e := &entry{receipt: fmt.Sprintf("rcpt_%06d", s.st.seq), credit: cr, issuedAt: s.opts.Now()}
	s.st.keys[key] = e
	return http.StatusCreated, e.receipt, false
}

func checkKey(key string) error {
	switch n := utf8.RuneCountInString(key); {
	case n == 0:
		return errors.New("the Idempotency-Key header is required")
	case n > maxKeyLen:
		return fmt.Errorf("the Idempotency-Key header is %d characters long, over the limit of %d", n, maxKeyLen)
	}
	return nil
}

// credit is a request's body as two calls with one key compare it.
type credit struct {
	id      string // the id's JSON, compacted
	account string
	cents   int64
}

func parseCredit(b []byte) (credit, error) {
	var body struct {
		ID      json.RawMessage `json:"id"`
		Account string          `json:"account"`
		Cents   json.RawMessage `json:"cents"`
	}
	if err := json.Unmarshal(b, &body); err != nil {
		return credit{}, fmt.Errorf(`the body is not a JSON object {"id","account","cents"}: %v`, err)
	}
	if body.Account == "" {
		return credit{}, errors.New("account is empty")
	}
	cents, err := strconv.ParseInt(string(body.Cents), 10, 64)
	if err != nil || cents <= 0 {
		got := string(body.Cents)
		if got == "" {
			got = "none"
		}
		return credit{}, fmt.Errorf("cents must be a positive integer, got %s", got)
	}
	var id bytes.Buffer
	if len(body.ID) > 0 {
		_ = json.Compact(&id, body.ID) // valid: Unmarshal took it
	}
	return credit{id: id.String(), account: body.Account, cents: cents}, nil
}

// wait waits d (until the end when d < 0) and tells whether the call may
// go on: not once the client is gone or the service closes.
func (s *Server) wait(ctx context.Context, d time.Duration) bool {
	if d == 0 {
		return ctx.Err() == nil
	}
	var timer <-chan time.Time
	if d > 0 {
		t := time.NewTimer(d)
		defer t.Stop()
		timer = t.C
	}
	select {
	case <-timer:
		return true
	case <-ctx.Done():
	case <-s.closing:
	}
	return false
}

func (s *Server) refuse(w http.ResponseWriter, c *Call, status int, typ, msg string) {
	s.answer(w, c, status, apiError{Error: errorBody{Type: typ, Message: msg}})
}

func (s *Server) answer(w http.ResponseWriter, c *Call, status int, v any) {
	c.Status = status
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// apiError is an error answer, in Stripe's shape.
type apiError struct {
	Error errorBody `json:"error"`
}

type errorBody struct {
	Type    string `json:"type"`
	Message string `json:"message"`
}
