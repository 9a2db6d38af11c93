package localstack

import (
	"context"
	"errors"
	"io"
	"sync"
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
