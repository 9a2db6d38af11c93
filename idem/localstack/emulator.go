package localstack

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// ErrStopped is returned by Invoke once the function is being stopped.
var ErrStopped = errors.New("localstack: function stopped")

// FunctionError is a function's own failure: an error it returned, a panic,
// an exit, or a timeout. Lambda counts these as the function's Errors.
type FunctionError struct {
	Function string
	// Type is the error's type as the runtime reported it, such as
	// "errorString", "Runtime.ExitError" or "Sandbox.Timedout".
	Type    string
	Message string
	// Payload is the error document the emulator returned.
	Payload []byte
}

func (e *FunctionError) Error() string {
	if e.Function == "" {
		return e.Type + ": " + e.Message
	}
	return e.Function + ": " + e.Type + ": " + e.Message
}

// Function runs one function's bootstrap under the AWS Lambda Runtime
// Interface Emulator. An emulator process is one execution environment: it
// takes one invoke at a time (an overlapping one crashes it), so Function
// queues invokes and starts up to MaxInstances environments, on demand, as
// Lambda does.
type Function struct {
	// Name is the function's logical id in the template.
	Name string
	// Timeout is the function's timeout, enforced by the emulator.
	Timeout time.Duration

	rie       string
	bootstrap string
	env       []string
	out       io.Writer

	idle  chan *instance
	slots chan struct{} // one token per live instance

	stopping chan struct{} // closed by Stop

	mu       sync.Mutex
	all      map[*instance]bool
	seq      int
	closed   bool
	inflight sync.WaitGroup
}

// FunctionConfig configures NewFunction.
type FunctionConfig struct {
	Name         string
	RIE          string   // path of the aws-lambda-rie binary
	Bootstrap    string   // path of the function's bootstrap, built for this machine
	Env          []string // the function's whole environment, KEY=value
	Timeout      time.Duration
	MaxInstances int
	// Output receives the function's and the emulator's output, one line
	// at a time, each prefixed with the function's name and instance.
	Output io.Writer
}

// NewFunction prepares a function; its first invoke starts its first
// environment.
func NewFunction(c FunctionConfig) *Function {
	if c.MaxInstances < 1 {
		c.MaxInstances = 1
	}
	if c.Output == nil {
		c.Output = io.Discard
	}
	return &Function{
		Name:      c.Name,
		Timeout:   c.Timeout,
		rie:       c.RIE,
		bootstrap: c.Bootstrap,
		env:       c.Env,
		out:       c.Output,
		idle:      make(chan *instance, c.MaxInstances),
		slots:     make(chan struct{}, c.MaxInstances),
		stopping:  make(chan struct{}),
		all:       map[*instance]bool{},
	}
}

// Invoke invokes the function with payload and returns its response. A
// failure of the function itself is a *FunctionError. When ctx ends first,
// Invoke returns, but the invoke it started runs to its end (its
// environment is busy until then, as in Lambda).
func (f *Function) Invoke(ctx context.Context, payload []byte) ([]byte, error) {
	f.mu.Lock()
	if f.closed {
		f.mu.Unlock()
		return nil, ErrStopped
	}
	f.inflight.Add(1)
	f.mu.Unlock()
	in, err := f.acquire(ctx)
	if err != nil {
		f.inflight.Done()
		return nil, err
	}
	type result struct {
		out []byte
		err error
	}
	ch := make(chan result, 1)
	go func() {
		defer f.inflight.Done()
		out, err := in.invoke(payload, f.Timeout)
		f.release(in)
		ch <- result{out, err}
	}()
	select {
	case r := <-ch:
		return r.out, r.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (f *Function) acquire(ctx context.Context) (*instance, error) {
	for {
		select {
		case in := <-f.idle:
			if in.alive() {
				return in, nil
			}
			f.discard(in)
			continue
		default:
		}
		select {
		case in := <-f.idle:
			if in.alive() {
				return in, nil
			}
			f.discard(in)
		case f.slots <- struct{}{}:
			in, err := f.start()
			if err != nil {
				<-f.slots
				return nil, err
			}
			return in, nil
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-f.stopping:
			return nil, ErrStopped
		}
	}
}

func (f *Function) release(in *instance) {
	if in.broken || !in.alive() {
		f.discard(in)
		return
	}
	f.idle <- in
}

func (f *Function) discard(in *instance) {
	in.stop()
	f.mu.Lock()
	delete(f.all, in)
	f.mu.Unlock()
	<-f.slots
}

// Instances is how many environments are running.
func (f *Function) Instances() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.all)
}

// PIDs are the process ids of the emulators running.
func (f *Function) PIDs() []int {
	f.mu.Lock()
	defer f.mu.Unlock()
	var pids []int
	for in := range f.all {
		pids = append(pids, in.cmd.Process.Pid)
	}
	return pids
}

// Stop refuses new invokes, waits for those in flight (at most the
// function's timeout and a margin), then stops every environment by process
// id.
func (f *Function) Stop() {
	f.mu.Lock()
	if !f.closed {
		f.closed = true
		close(f.stopping)
	}
	f.mu.Unlock()
	done := make(chan struct{})
	go func() { f.inflight.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(f.Timeout + 5*time.Second):
	}
	f.mu.Lock()
	all := make([]*instance, 0, len(f.all))
	for in := range f.all {
		all = append(all, in)
	}
	f.mu.Unlock()
	var wg sync.WaitGroup
	for _, in := range all {
		wg.Go(in.stop)
	}
	wg.Wait()
}

// instance is one emulator process: one execution environment.
type instance struct {
	fn     string
	n      int
	cmd    *exec.Cmd
	url    string
	done   chan struct{}
	broken bool // set by the invoking goroutine only
	once   sync.Once
}

func (f *Function) start() (*instance, error) {
	f.mu.Lock()
	if f.closed {
		f.mu.Unlock()
		return nil, ErrStopped
	}
	f.seq++
	n := f.seq
	f.mu.Unlock()
	var lastErr error
	for range 3 { // a port taken between probing and binding: try others
		in, err := f.startOnce(n)
		if err == nil {
			f.mu.Lock()
			f.all[in] = true
			f.mu.Unlock()
			return in, nil
		}
		lastErr = err
	}
	return nil, lastErr
}

func (f *Function) startOnce(n int) (*instance, error) {
	ports, err := freePorts(2)
	if err != nil {
		return nil, err
	}
	addr := "127.0.0.1:" + strconv.Itoa(ports[0])
	cmd := exec.Command(f.rie,
		"--log-level", "warn",
		"--runtime-interface-emulator-address", addr,
		"--runtime-api-address", "127.0.0.1:"+strconv.Itoa(ports[1]),
		"./"+filepath.Base(f.bootstrap))
	// The emulator runs the bootstrap from its working directory, as
	// Lambda runs it from /var/task.
	cmd.Dir = filepath.Dir(f.bootstrap)
	cmd.Env = f.env
	w := newLineWriter(f.out, fmt.Sprintf("%s#%d | ", f.Name, n))
	cmd.Stdout, cmd.Stderr = w, w
	cmd.SysProcAttr = childProcAttr()
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("localstack: start %s: %w", f.rie, err)
	}
	in := &instance{fn: f.Name, n: n, cmd: cmd, url: "http://" + addr + "/2015-03-31/functions/function/invocations", done: make(chan struct{})}
	go func() {
		_ = cmd.Wait()
		w.Flush()
		close(in.done)
	}()
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
		if err == nil {
			c.Close()
			return in, nil
		}
		select {
		case <-in.done:
			return nil, fmt.Errorf("localstack: %s: the emulator exited at start (%v)", f.Name, cmd.ProcessState)
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			in.stop()
			return nil, fmt.Errorf("localstack: %s: the emulator did not listen on %s within 10s", f.Name, addr)
		}
	}
}

func (in *instance) alive() bool {
	select {
	case <-in.done:
		return false
	default:
		return true
	}
}

var invokeClient = &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 1, IdleConnTimeout: time.Minute}}

func (in *instance) invoke(payload []byte, timeout time.Duration) ([]byte, error) {
	// The emulator enforces the timeout; this one only guards against an
	// emulator that hangs.
	ctx, cancel := context.WithTimeout(context.Background(), timeout+10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, in.url, bytes.NewReader(payload))
	if err != nil {
		return nil, err
	}
	req.Header.Set("X-Amzn-RequestId", newRequestID())
	resp, err := invokeClient.Do(req)
	if err != nil {
		in.broken = true
		return nil, fmt.Errorf("localstack: invoke %s#%d: %w", in.fn, in.n, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		in.broken = true
		return nil, fmt.Errorf("localstack: invoke %s#%d: %w", in.fn, in.n, err)
	}
	switch {
	case resp.StatusCode == http.StatusOK && bytes.HasPrefix(body, []byte("Task timed out")):
		// Lambda replaces an environment whose invoke timed out.
		in.broken = true
		return nil, &FunctionError{Function: in.fn, Type: "Sandbox.Timedout", Message: string(body), Payload: body}
	case resp.StatusCode == http.StatusOK:
		if fe := errorDocument(in.fn, body); fe != nil {
			return nil, fe
		}
		return body, nil
	case resp.StatusCode == http.StatusBadGateway:
		// The runtime panicked or exited; the emulator starts it again
		// on the next invoke, as Lambda does.
		if fe := errorDocument(in.fn, body); fe != nil {
			return nil, fe
		}
		return nil, &FunctionError{Function: in.fn, Type: "Runtime.Unknown", Message: string(body), Payload: body}
	}
	in.broken = true
	return nil, fmt.Errorf("localstack: invoke %s#%d: emulator answered %s: %s", in.fn, in.n, resp.Status, body)
}

// errorDocument reads the error document a runtime posts for a failed
// invoke ({"errorMessage": …, "errorType": …}); the emulator returns it as
// the response, without Lambda's X-Amz-Function-Error header.
func errorDocument(fn string, body []byte) *FunctionError {
	if !bytes.HasPrefix(bytes.TrimSpace(body), []byte("{")) {
		return nil
	}
	var doc map[string]json.RawMessage
	if json.Unmarshal(body, &doc) != nil {
		return nil
	}
	msg, hasMsg := doc["errorMessage"]
	typ, hasType := doc["errorType"]
	if !hasMsg || !hasType {
		return nil
	}
	for k := range doc {
		if k != "errorMessage" && k != "errorType" && k != "stackTrace" && k != "requestId" {
			return nil
		}
	}
	fe := &FunctionError{Function: fn, Payload: body}
	_ = json.Unmarshal(msg, &fe.Message)
	_ = json.Unmarshal(typ, &fe.Type)
	return fe
}

// stop stops the emulator by process id: SIGTERM (it kills its runtime and
// exits), then SIGKILL to its process group, which holds only the emulator
// and the bootstrap it started.
func (in *instance) stop() {
	in.once.Do(func() {
		_ = in.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-in.done:
		case <-time.After(3 * time.Second):
			killGroup(in.cmd.Process.Pid)
			<-in.done
		}
	})
}

// freePorts finds n free TCP ports on 127.0.0.1.
func freePorts(n int) ([]int, error) {
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	var ports []int
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("localstack: find a free port: %w", err)
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

func newRequestID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	h := hex.EncodeToString(b[:])
	return h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

// lineWriter writes whole lines to out, each with a prefix, and drops the
// emulator's START and END lines (its REPORT line says it all).
type lineWriter struct {
	mu     sync.Mutex
	out    io.Writer
	prefix string
	buf    []byte
}

var outputMu sync.Mutex // one line at a time across every function

func newLineWriter(out io.Writer, prefix string) *lineWriter {
	return &lineWriter{out: out, prefix: prefix}
}

func (w *lineWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf = append(w.buf, p...)
	for {
		i := bytes.IndexByte(w.buf, '\n')
		if i < 0 {
			break
		}
		w.emit(w.buf[:i])
		w.buf = w.buf[i+1:]
	}
	if len(w.buf) > 64<<10 {
		w.emit(w.buf)
		w.buf = w.buf[:0]
	}
	return len(p), nil
}

// Flush writes what is left of a last line without a newline.
func (w *lineWriter) Flush() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.buf) > 0 {
		w.emit(w.buf)
		w.buf = nil
	}
}

func (w *lineWriter) emit(line []byte) {
	s := strings.TrimRight(string(line), "\r")
	if strings.HasPrefix(s, "START RequestId: ") || strings.HasPrefix(s, "END RequestId: ") {
		return
	}
	outputMu.Lock()
	fmt.Fprintf(w.out, "%s%s\n", w.prefix, s)
	outputMu.Unlock()
}
