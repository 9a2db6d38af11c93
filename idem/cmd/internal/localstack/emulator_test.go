package localstack

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

func newEcho(t *testing.T, instances int, timeout time.Duration) (*Function, *syncBuffer) {
	t.Helper()
	var out syncBuffer
	f := NewFunction(FunctionConfig{
		Name:         "Echo",
		RIE:          testRIE(t),
		Bootstrap:    testEcho(t),
		Env:          []string{"PATH=/usr/bin:/bin", "GREETING=hello", fmt.Sprintf("AWS_LAMBDA_FUNCTION_TIMEOUT=%d", int(timeout/time.Second))},
		Timeout:      timeout,
		MaxInstances: instances,
		Output:       &out,
	})
	t.Cleanup(func() {
		f.Stop()
		if t.Failed() {
			t.Logf("function output:\n%s", out.String())
		}
	})
	return f, &out
}

type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

type echoResponse struct {
	PID   int            `json:"pid"`
	Env   string         `json:"env"`
	Event map[string]any `json:"event"`
}

func invokeEcho(t *testing.T, f *Function, payload string) (echoResponse, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := f.Invoke(ctx, []byte(payload))
	if err != nil {
		return echoResponse{}, err
	}
	var r echoResponse
	if err := json.Unmarshal(out, &r); err != nil {
		t.Fatalf("response %q: %v", out, err)
	}
	return r, nil
}

// An emulator crashes on an overlapping invoke: many concurrent invokes
// must queue for at most Instances environments, and every one succeed.
func TestFunctionQueuesConcurrentInvokes(t *testing.T) {
	f, _ := newEcho(t, 2, 10*time.Second)
	const n = 24
	var wg sync.WaitGroup
	pids := make([]int, n)
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() {
			r, err := invokeEcho(t, f, fmt.Sprintf(`{"i":%d,"sleepMs":20}`, i))
			errs[i] = err
			pids[i] = r.PID
			if err == nil && r.Event["i"] != float64(i) {
				errs[i] = fmt.Errorf("invoke %d got the event of %v", i, r.Event["i"])
			}
		})
	}
	wg.Wait()
	distinct := map[int]bool{}
	for i, err := range errs {
		if err != nil {
			t.Errorf("invoke %d: %v", i, err)
		}
		distinct[pids[i]] = true
	}
	if got := f.Instances(); got < 1 || got > 2 {
		t.Errorf("expect 1 or 2 environments, got %d", got)
	}
	if len(distinct) > 2 {
		t.Errorf("expect the invokes served by at most 2 runtimes, got %d", len(distinct))
	}
}

func TestFunctionEnvironment(t *testing.T) {
	f, _ := newEcho(t, 1, 10*time.Second)
	r, err := invokeEcho(t, f, `{"env":"GREETING"}`)
	if err != nil || r.Env != "hello" {
		t.Fatalf("expect GREETING=hello in the function, got %q, %v", r.Env, err)
	}
}

func TestFunctionErrors(t *testing.T) {
	f, out := newEcho(t, 1, 2*time.Second)
	for _, tc := range []struct {
		name, payload, errType string
	}{
		{"returned error", `{"fail":true}`, "errorString"},
		{"panic", `{"panic":true}`, "string"},
		{"exit", `{"exit":true}`, "Runtime.ExitError"},
		{"timeout", `{"sleepMs":5000}`, "Sandbox.Timedout"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := invokeEcho(t, f, tc.payload)
			var fe *FunctionError
			if !errors.As(err, &fe) || fe.Type != tc.errType {
				t.Fatalf("expect a *FunctionError of type %s, got %v", tc.errType, err)
			}
			// The function serves the next invoke, in the same
			// environment or a new one, as Lambda does.
			if _, err := invokeEcho(t, f, `{"after":"`+tc.name+`"}`); err != nil {
				t.Fatalf("invoke after the %s: %v", tc.name, err)
			}
		})
	}
	if strings.Contains(out.String(), "START RequestId") {
		t.Errorf("the emulator's START lines should be dropped")
	}
}

func TestFunctionStopEndsItsProcesses(t *testing.T) {
	f, _ := newEcho(t, 2, 10*time.Second)
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() { _, _ = invokeEcho(t, f, `{"sleepMs":50}`) })
	}
	wg.Wait()
	pids := f.PIDs()
	if len(pids) == 0 {
		t.Fatal("expect running emulators")
	}
	f.Stop()
	for _, pid := range pids {
		if err := syscall.Kill(pid, 0); err == nil {
			t.Errorf("emulator %d still runs after Stop", pid)
		}
	}
	if _, err := f.Invoke(context.Background(), []byte(`{}`)); !errors.Is(err, ErrStopped) {
		t.Errorf("expect ErrStopped after Stop, got %v", err)
	}
}

// In the emulator's managed-instances mode one environment, one process,
// runs up to MaxConcurrency invokes at once; more wait for a place, never
// refused. A timeout leaves the environment running; a panic ends it and
// the next invoke starts another.
func TestFunctionManagedInstances(t *testing.T) {
	if runtime.GOOS != "linux" || os.Geteuid() != 0 {
		t.Skip("the emulator's managed-instances mode runs on Linux, as root (managedInstancesCommand)")
	}
	const conc = 4
	var out syncBuffer
	f := NewFunction(FunctionConfig{Name: "Echo", RIE: testRIE(t), Bootstrap: testEcho(t), Timeout: 2 * time.Second,
		Env: []string{"PATH=/usr/bin:/bin", "AWS_LAMBDA_FUNCTION_TIMEOUT=2"}, MaxInstances: 1, MaxConcurrency: conc, Output: &out})
	t.Cleanup(func() {
		f.Stop()
		if t.Failed() {
			t.Logf("function output:\n%s", out.String())
		}
	})
	// concurrently invokes n times and returns the answers and when each
	// invoke started and ended.
	concurrently := func(n int, payload string) ([]echoResponse, []error, []time.Time, []time.Time) {
		rs, errs := make([]echoResponse, n), make([]error, n)
		starts, ends := make([]time.Time, n), make([]time.Time, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() {
				starts[i] = time.Now()
				rs[i], errs[i] = invokeEcho(t, f, payload)
				ends[i] = time.Now()
			})
		}
		wg.Wait()
		return rs, errs, starts, ends
	}

	rs, errs, starts, ends := concurrently(conc, `{"sleepMs":500,"env":"AWS_LAMBDA_MAX_CONCURRENCY"}`)
	pids := map[int]bool{}
	for i := range conc {
		if errs[i] != nil {
			t.Fatalf("invoke %d: %v", i, errs[i])
		}
		pids[rs[i].PID] = true
		if rs[i].Env != strconv.Itoa(conc) {
			t.Errorf("invoke %d: expect AWS_LAMBDA_MAX_CONCURRENCY=%d in the function, got %q", i, conc, rs[i].Env)
		}
	}
	if len(pids) != 1 || f.Instances() != 1 {
		t.Errorf("expect one process in one environment, got pids %v, %d environments", pids, f.Instances())
	}
	if last, first := slices.MaxFunc(starts, time.Time.Compare), slices.MinFunc(ends, time.Time.Compare); !last.Before(first) {
		t.Errorf("expect the %d invokes to overlap: the last started at %v, the first ended at %v", conc, last, first)
	}

	_, errs, _, _ = concurrently(3*conc, `{"sleepMs":50}`)
	for i, err := range errs {
		if err != nil {
			t.Errorf("invoke %d of %d: %v", i, 3*conc, err)
		}
	}
	pid := f.PIDs()[0]

	// The hanging handler holds one runtime past its timeout: the
	// environment lives on, and the next invokes find a place in time.
	var fe *FunctionError
	if _, err := invokeEcho(t, f, `{"hangMs":3000}`); !errors.As(err, &fe) || fe.Type != "Sandbox.Timedout" {
		t.Fatalf("expect a Sandbox.Timedout, got %v", err)
	}
	_, errs, _, _ = concurrently(conc, `{"sleepMs":50}`)
	for i, err := range errs {
		if err != nil {
			t.Errorf("invoke %d after the timeout: %v", i, err)
		}
	}
	if got := f.PIDs(); len(got) != 1 || got[0] != pid {
		t.Errorf("expect the environment %d to outlive a timeout, got %v", pid, got)
	}

	// A panic ends the process, as on Lambda Managed Instances, failing
	// what it runs or takes until then; a new environment follows.
	if _, err := invokeEcho(t, f, `{"panic":true}`); !errors.As(err, &fe) {
		t.Fatalf("expect a *FunctionError for the panic, got %v", err)
	}
	for try := 1; ; try++ {
		_, err := invokeEcho(t, f, `{"after":"panic"}`)
		if err == nil {
			break
		}
		// Invokes the ending process takes fail: Runtime.ExitError, or
		// Runtime.Unknown when the emulator's answer breaks off.
		if !errors.As(err, &fe) || fe.Type != "Runtime.ExitError" && fe.Type != "Runtime.Unknown" || try == 3 {
			t.Fatalf("invoke %d after the panic: %v", try, err)
		}
	}
	if got := f.PIDs(); len(got) != 1 || got[0] == pid {
		t.Errorf("expect a new environment after the panic ended %d, got %v", pid, got)
	}
}
