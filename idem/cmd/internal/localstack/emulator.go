package localstack

import (
	"context"
	"errors"
	"io"
	"slices"
	"strconv"
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
// Interface Emulator. An emulator process is one execution environment. It
// takes one invoke at a time (an overlapping one crashes it), or, in the
// emulator's managed-instances mode (FunctionConfig.MaxConcurrency above 1),
// up to MaxConcurrency at once, as on Lambda Managed Instances (one more is
// refused). So Function queues invokes, gives each environment no more than
// it takes, and starts up to MaxInstances environments, on demand, once
// those running are full, as Lambda does.
type Function struct {
	// Name is the function's logical id in the template.
	Name string
	// Timeout is the function's timeout, enforced by the emulator.
	Timeout time.Duration
	// MaxConcurrency is how many invokes one environment runs at once.
	MaxConcurrency int

	rie          string
	bootstrap    string
	env          []string
	out          io.Writer
	maxInstances int

	stopping chan struct{} // closed by Stop

	mu       sync.Mutex
	all      []*instance   // the environments taking invokes, oldest first
	starting int           // environments being started
	changed  chan struct{} // closed, and replaced, when an invoke ends or an environment goes
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
	// MaxConcurrency is how many invokes one environment runs at once.
	// Above 1 each environment runs as on Lambda Managed Instances: the
	// emulator in its managed-instances mode, AWS_LAMBDA_MAX_CONCURRENCY
	// set, and aws-lambda-go running that many handlers at once in one
	// process. That mode needs Linux and root (managedInstancesCommand).
	// Defaults to 1: one invoke at a time, Lambda's default.
	MaxConcurrency int
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
	if c.MaxConcurrency < 1 {
		c.MaxConcurrency = 1
	}
	if c.Output == nil {
		c.Output = io.Discard
	}
	env := c.Env
	if c.MaxConcurrency > 1 {
		// The emulator's managed-instances mode, which passes it on to
		// the runtime; last, so it wins over one in c.Env.
		env = append(slices.Clip(env), "AWS_LAMBDA_MAX_CONCURRENCY="+strconv.Itoa(c.MaxConcurrency))
	}
	return &Function{
		Name:           c.Name,
		Timeout:        c.Timeout,
		MaxConcurrency: c.MaxConcurrency,
		rie:            c.RIE,
		bootstrap:      c.Bootstrap,
		env:            env,
		out:            c.Output,
		maxInstances:   c.MaxInstances,
		stopping:       make(chan struct{}),
		changed:        make(chan struct{}),
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
		// A managed-instances environment refuses an invoke while all its
		// runtimes are busy, one of them still in the handler of an invoke
		// that timed out: try again, as Lambda routes to another
		// environment.
		for errors.Is(err, errNoIdleRuntime) {
			f.release(in)
			select {
			case <-f.stopping:
				ch <- result{nil, ErrStopped}
				return
			case <-time.After(10 * time.Millisecond):
			}
			actx, cancel := context.WithTimeout(context.Background(), f.Timeout)
			in, err = f.acquire(actx)
			cancel()
			if err != nil {
				ch <- result{nil, err}
				return
			}
			out, err = in.invoke(payload, f.Timeout)
		}
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

// acquire takes a place in the oldest environment with one free, or starts
// an environment when all are full and there are fewer than MaxInstances,
// or waits.
func (f *Function) acquire(ctx context.Context) (*instance, error) {
	for {
		f.mu.Lock()
		if f.closed {
			f.mu.Unlock()
			return nil, ErrStopped
		}
		var picked *instance
		var gone []*instance
		live := f.all[:0]
		for _, in := range f.all {
			switch {
			case !in.alive() && in.active == 0:
				gone = append(gone, in)
				continue
			case picked == nil && in.alive() && in.active < f.MaxConcurrency:
				picked = in
				in.active++
			}
			live = append(live, in)
		}
		clear(f.all[len(live):])
		f.all = live
		start := picked == nil && len(f.all)+f.starting < f.maxInstances
		if start {
			f.starting++
		}
		changed := f.changed
		f.mu.Unlock()
		for _, in := range gone {
			in.stop()
		}
		switch {
		case picked != nil:
			return picked, nil
		case start:
			return f.start()
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-f.stopping:
			return nil, ErrStopped
		}
	}
}

// release gives back a place taken by acquire; an environment that broke
// (its invoke timed out in the one-at-a-time mode, or it stopped
// answering) takes no more invokes and is stopped, as Lambda replaces it.
func (f *Function) release(in *instance) {
	broken := in.broken.Load() || !in.alive()
	f.mu.Lock()
	in.active--
	if broken {
		f.all = slices.DeleteFunc(f.all, func(x *instance) bool { return x == in })
	}
	close(f.changed)
	f.changed = make(chan struct{})
	f.mu.Unlock()
	if broken {
		in.stop()
	}
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
	for _, in := range f.all {
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
	all := slices.Clone(f.all)
	f.mu.Unlock()
	var wg sync.WaitGroup
	for _, in := range all {
		wg.Go(in.stop)
	}
	wg.Wait()
}
