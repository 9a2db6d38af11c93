package chaos_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// act is what the proxy does to the function at its next
// TransactWriteItems.
type act int

const (
	pass act = iota
	// killBefore SIGKILLs the function before the transaction is sent.
	killBefore
	// killAfter sends the transaction, lets it commit, and SIGKILLs the
	// function before it can read the answer.
	killAfter
	// freezeAfter SIGSTOPs the function, then sends its transaction: it
	// commits, and the frozen function cannot read the answer before the
	// Lambda timeout ends the invoke.
	freezeAfter
	// holdAnswer sends the transaction and holds its answer until the
	// function gives up on it.
	holdAnswer
	// holdRequest SIGSTOPs the function and keeps its transaction unsent
	// until Release: a request that reaches DynamoDB after its invoke died.
	holdRequest
	// cutAnswer sends the transaction, lets it commit, and answers with
	// DynamoDB's status and headers but half its body before closing the
	// connection: the function reads an unexpected EOF, its answer lost
	// outside the API. It needs no victim. A resend of the request (the
	// same ClientRequestToken, as the SDK's retries carry) is cut too, so
	// an SDK that retried could not turn the fault into a clean answer.
	cutAnswer
)

// proxy stands between a function and DynamoDB and acts on the function
// process at its transaction, so nothing in the function needs a test hook.
type proxy struct {
	t      *testing.T
	url    string
	target string

	mu     sync.Mutex
	plan   act
	skip   int // transactions to pass before acting
	victim func() (*proc, error)
	froze  []*proc       // to be sure they end with the test
	held   *http.Request // holdRequest's transaction
	body   []byte        // and its body
	acted  chan struct{} // closed once the plan has run

	inflight atomic.Int32 // requests being served

	cutToken string // cutAnswer's request, by its ClientRequestToken
	cuts     int    // answers cut

	// op is the call the plan acts at, by the end of its X-Amz-Target.
	// Defaults to ".TransactWriteItems"; ".SendMessageBatch" for a relay.
	op string
}

func newProxy(t *testing.T, target string) *proxy {
	p := &proxy{t: t, target: strings.TrimSuffix(target, "/")}
	srv := httptest.NewServer(http.HandlerFunc(p.serve))
	p.url = srv.URL
	t.Cleanup(func() {
		srv.CloseClientConnections()
		srv.Close()
		for _, v := range p.froze {
			v.kill()
		}
	})
	return p
}

// arm sets the plan for the transaction after the first skip ones, acting on
// the process victim finds.
func (p *proxy) arm(a act, skip int, victim func() (*proc, error)) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.plan, p.skip, p.victim, p.acted = a, skip, victim, make(chan struct{})
}

func (p *proxy) serve(w http.ResponseWriter, r *http.Request) {
	p.inflight.Add(1)
	defer p.inflight.Add(-1)
	body, err := io.ReadAll(r.Body)
	if err != nil {
		panic(http.ErrAbortHandler)
	}
	a := pass
	var victim func() (*proc, error)
	var acted chan struct{}
	op := p.op
	if op == "" {
		op = ".TransactWriteItems"
	}
	if strings.HasSuffix(r.Header.Get("X-Amz-Target"), op) {
		p.mu.Lock()
		if p.cutToken != "" && requestToken(body) == p.cutToken {
			a = cutAnswer
		} else if p.plan != pass {
			if p.skip > 0 {
				p.skip--
			} else {
				a, victim, acted = p.plan, p.victim, p.acted
				p.plan = pass
			}
		}
		if a == cutAnswer {
			p.cutToken = requestToken(body)
			p.cuts++
		}
		p.mu.Unlock()
	}
	if a == pass {
		p.forward(w, r, body)
		return
	}
	if acted != nil {
		defer close(acted)
	}
	if a == cutAnswer {
		p.cut(w, r, body)
		return
	}
	v, err := victim()
	if err != nil {
		p.t.Errorf("proxy: no function process to act on: %v", err)
		panic(http.ErrAbortHandler)
	}
	switch a {
	case killBefore:
		v.kill()
	case killAfter:
		p.forward(discard{}, r, body)
		v.kill()
	case freezeAfter, holdRequest:
		v.freeze()
		p.mu.Lock()
		p.froze = append(p.froze, v)
		if a == holdRequest {
			p.held, p.body = r.Clone(r.Context()), body
		}
		p.mu.Unlock()
		if a == freezeAfter {
			p.forward(discard{}, r, body)
		}
	case holdAnswer:
		p.forward(discard{}, r, body)
	}
	// Never answer: wait for the function's end (killed, or killed by the
	// emulator at the timeout) or for it to give up (holdAnswer), so a
	// dying SDK never sees an error it could retry.
	select {
	case <-r.Context().Done():
	case <-time.After(time.Minute):
		p.t.Errorf("proxy: the function held its connection for a minute")
	}
	panic(http.ErrAbortHandler)
}

// waitActed waits for the armed plan to have run, and for every request
// the function sent before it died to have had DynamoDB's answer.
func (p *proxy) waitActed(t *testing.T) {
	t.Helper()
	p.mu.Lock()
	ch := p.acted
	p.mu.Unlock()
	guard := time.After(time.Minute)
	select {
	case <-ch:
	case <-guard:
		t.Fatal("the proxy never saw the function's transaction")
	}
	for p.inflight.Load() > 0 {
		select {
		case <-time.After(10 * time.Millisecond):
		case <-guard:
			t.Fatal("the proxy still serves requests a minute on")
		}
	}
}

// release sends the transaction holdRequest kept, now, and returns
// DynamoDB's answer.
func (p *proxy) release(t *testing.T) (int, string) {
	t.Helper()
	p.mu.Lock()
	r, body := p.held, p.body
	p.mu.Unlock()
	if r == nil {
		t.Fatal("no transaction is held")
	}
	rec := httptest.NewRecorder()
	p.forward(rec, r, body)
	return rec.Code, rec.Body.String()
}

var upstream = &http.Client{Transport: &http.Transport{Proxy: nil}, Timeout: time.Minute}

func (p *proxy) forward(w http.ResponseWriter, r *http.Request, body []byte) {
	req, err := http.NewRequest(r.Method, p.target+r.URL.RequestURI(), bytes.NewReader(body))
	if err != nil {
		panic(err)
	}
	for k, vs := range r.Header {
		req.Header[k] = vs
	}
	resp, err := upstream.Do(req)
	if err != nil {
		p.t.Errorf("proxy: DynamoDB: %v", err)
		panic(http.ErrAbortHandler)
	}
	defer resp.Body.Close()
	for k, vs := range resp.Header {
		w.Header()[k] = vs
	}
	w.WriteHeader(resp.StatusCode)
	_, _ = io.Copy(w, resp.Body)
}

// cut forwards the request, then writes DynamoDB's status and headers and
// the first half of its body, and drops the connection.
func (p *proxy) cut(w http.ResponseWriter, r *http.Request, body []byte) {
	answer := httptest.NewRecorder()
	p.forward(answer, r, body)
	for k, vs := range answer.Header() {
		w.Header()[k] = vs
	}
	w.Header().Set("Content-Length", strconv.Itoa(answer.Body.Len()))
	w.WriteHeader(answer.Code)
	_, _ = w.Write(answer.Body.Bytes()[:answer.Body.Len()/2])
	if f, ok := w.(http.Flusher); ok {
		f.Flush()
	}
	panic(http.ErrAbortHandler)
}

// cutAnswers is how many answers cutAnswer cut: more than one if the SDK
// resent the request.
func (p *proxy) cutAnswers() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cuts
}

func requestToken(body []byte) string {
	var in struct{ ClientRequestToken string }
	_ = json.Unmarshal(body, &in)
	return in.ClientRequestToken
}

// discard is a ResponseWriter that keeps nothing: an answer no one reads.
type discard struct{}

func (discard) Header() http.Header         { return http.Header{} }
func (discard) Write(b []byte) (int, error) { return len(b), nil }
func (discard) WriteHeader(int)             {}

// proc is a process identified by its pid and start time, so a signal never
// reaches a process that reused the pid.
type proc struct {
	pid   int
	start string
}

// childOf finds the process named name whose parent is ppid: the
// bootstrap the emulator started.
func childOf(ppid int, name string) (*proc, error) {
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	for _, d := range dirs {
		pid, _ := strconv.Atoi(filepath.Base(d))
		comm, parent, start, err := stat(pid)
		if err == nil && parent == ppid && comm == name {
			return &proc{pid: pid, start: start}, nil
		}
	}
	return nil, fmt.Errorf("no process %s is a child of %d", name, ppid)
}

// stat reads a process's name, parent and start time from /proc.
func stat(pid int) (comm string, ppid int, start string, err error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return "", 0, "", err
	}
	s := string(b)
	open, end := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
	if open < 0 || end < open {
		return "", 0, "", errors.New("unreadable stat")
	}
	f := strings.Fields(s[end+1:]) // state ppid pgrp … starttime is the 20th
	if len(f) < 20 {
		return "", 0, "", errors.New("short stat")
	}
	ppid, _ = strconv.Atoi(f[1])
	return s[open+1 : end], ppid, f[19], nil
}

func (p *proc) same() bool {
	_, _, start, err := stat(p.pid)
	return err == nil && start == p.start
}

func (p *proc) kill() {
	if p.same() {
		_ = syscall.Kill(p.pid, syscall.SIGKILL)
	}
}

func (p *proc) freeze() {
	if p.same() {
		_ = syscall.Kill(p.pid, syscall.SIGSTOP)
	}
}
