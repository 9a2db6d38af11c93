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
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// instance is one emulator process: one execution environment.
type instance struct {
	fn     string
	n      int
	cmd    *exec.Cmd
	url    string
	done   chan struct{}
	active int // invokes in it; guarded by its Function's mu
	broken atomic.Bool
	// concurrent is the emulator's managed-instances mode.
	concurrent bool
	once       sync.Once
}

// start starts an environment for acquire, which counted it in f.starting,
// and returns it with the first of its places taken.
func (f *Function) start() (*instance, error) {
	f.mu.Lock()
	f.seq++
	n := f.seq
	f.mu.Unlock()
	var in *instance
	var err error
	for range 3 { // a port taken between probing and binding: try others
		if in, err = f.startOnce(n); err == nil {
			break
		}
	}
	f.mu.Lock()
	f.starting--
	if err == nil && f.closed {
		err = ErrStopped
	}
	if err == nil {
		in.active = 1
		f.all = append(f.all, in)
	}
	close(f.changed) // another may start now, or give up
	f.changed = make(chan struct{})
	f.mu.Unlock()
	if err != nil {
		if in != nil {
			in.stop()
		}
		return nil, err
	}
	return in, nil
}

func (f *Function) startOnce(n int) (*instance, error) {
	ports, err := freePorts(2)
	if err != nil {
		return nil, err
	}
	addr := "127.0.0.1:" + strconv.Itoa(ports[0])
	args := []string{
		"--log-level", "warn",
		"--runtime-interface-emulator-address", addr,
		"--runtime-api-address", "127.0.0.1:" + strconv.Itoa(ports[1]),
		"./" + filepath.Base(f.bootstrap),
	}
	var cmd *exec.Cmd
	if f.MaxConcurrency > 1 {
		if cmd, err = managedInstancesCommand(f.rie, filepath.Dir(f.bootstrap), args); err != nil {
			return nil, fmt.Errorf("localstack: %s: %w", f.Name, err)
		}
	} else {
		cmd = exec.Command(f.rie, args...)
		cmd.SysProcAttr = childProcAttr()
	}
	// The emulator runs the bootstrap from its working directory, as
	// Lambda runs it from /var/task.
	cmd.Dir = filepath.Dir(f.bootstrap)
	cmd.Env = f.env
	w := newLineWriter(f.out, fmt.Sprintf("%s#%d | ", f.Name, n))
	cmd.Stdout, cmd.Stderr = w, w
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("localstack: start %s: %w", f.rie, err)
	}
	in := &instance{fn: f.Name, n: n, cmd: cmd, concurrent: f.MaxConcurrency > 1, url: "http://" + addr + "/2015-03-31/functions/function/invocations", done: make(chan struct{})}
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
	start := time.Now()
	resp, err := invokeClient.Do(req)
	if err != nil {
		in.broken.Store(true)
		return nil, fmt.Errorf("localstack: invoke %s#%d: %w", in.fn, in.n, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		in.broken.Store(true)
		return nil, fmt.Errorf("localstack: invoke %s#%d: %w", in.fn, in.n, err)
	}
	if in.concurrent {
		return in.managedAnswer(resp, body)
	}
	switch {
	case resp.StatusCode == http.StatusOK && (bytes.HasPrefix(body, []byte("Task timed out")) ||
		time.Since(start) >= timeout && errorDocument(in.fn, body) == nil):
		// Lambda replaces an environment whose invoke timed out. Under
		// load the emulator may answer a timed-out invoke without its
		// "Task timed out" text (the sandbox torn down first); an answer
		// that came no sooner than the timeout is that timeout.
		in.broken.Store(true)
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
	in.broken.Store(true)
	return nil, fmt.Errorf("localstack: invoke %s#%d: emulator answered %s: %s", in.fn, in.n, resp.Status, body)
}

// errNoIdleRuntime is a managed-instances environment's refusal of an
// invoke: all its runtimes are busy. The invoke did not start.
var errNoIdleRuntime = errors.New("localstack: no idle runtime in the environment")

// managedAnswer reads the emulator's answer in its managed-instances mode,
// which names every failure in an Error-Type header. A timeout leaves the
// environment running, as on Lambda Managed Instances (its handler runs on,
// its runtime busy until it returns); a panic or an exit ends the whole
// process, the emulator with it, once every handler in it has returned, and
// fails the invokes it takes meanwhile (Runtime.ExitError, or
// Runtime.Unknown when the emulator's answer breaks off).
func (in *instance) managedAnswer(resp *http.Response, body []byte) ([]byte, error) {
	switch errType := resp.Header.Get("Error-Type"); {
	case errType == "Runtime.Unavailable":
		return nil, errNoIdleRuntime
	case errType != "":
		switch errType {
		case "Runtime.ExitError", "Runtime.Unknown":
			// Its process is gone, or the emulator lost track of it (after a
			// panic it may answer an invoke it takes while it ends with a
			// broken response): either way the environment is ending.
			in.broken.Store(true)
		}
		if fe := errorDocument(in.fn, body); fe != nil {
			return nil, fe
		}
		return nil, &FunctionError{Function: in.fn, Type: errType, Message: string(body), Payload: body}
	case resp.StatusCode == http.StatusOK:
		return body, nil
	}
	in.broken.Store(true)
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
