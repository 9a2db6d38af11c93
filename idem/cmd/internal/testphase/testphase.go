// Package testphase lets a long test say what it is doing while it runs: a
// line as each phase starts, and one as it ends with its counts and its
// time. They are t.Logf lines marked with Prefix, so `go test -v` shows
// them as they come; `make test` shows them as they come too, and no other
// output of a passing package (see testphase/gotest), since plain `go test
// ./...` prints a passing package's log only with -v, and then all of it.
package testphase

import (
	"fmt"
	"sync/atomic"
	"testing"
	"time"
)

// Prefix marks a phase line in a test's log.
const Prefix = "phase: "

// Phase is one phase of a test, named in each of its lines.
type Phase struct {
	t     testing.TB
	name  string
	begin time.Time
	ended atomic.Bool
}

// Start logs the phase's name and what it is about to do. A phase whose
// test ends without its End (a t.Fatal, a skip) is logged as stopped.
func Start(t testing.TB, name, format string, args ...any) *Phase {
	t.Helper()
	p := &Phase{t: t, name: name, begin: time.Now()}
	t.Logf("%s%s: %s…", Prefix, name, fmt.Sprintf(format, args...))
	t.Cleanup(func() {
		if !p.ended.Load() {
			p.End("stopped")
		}
	})
	return p
}

// Logf logs how far the phase has come, with the time since it started.
func (p *Phase) Logf(format string, args ...any) {
	p.t.Helper()
	p.t.Logf("%s%s: %s, %v", Prefix, p.name, fmt.Sprintf(format, args...), p.Elapsed())
}

// End logs what the phase did, with its time, and says so if the test has
// failed: the person waiting learns it now, not when the package ends.
func (p *Phase) End(format string, args ...any) {
	p.t.Helper()
	p.ended.Store(true)
	outcome := ""
	switch {
	case p.t.Failed():
		outcome = ": FAILED"
	case p.t.Skipped():
		outcome = ": skipped"
	}
	p.t.Logf("%s%s: %s, %v%s", Prefix, p.name, fmt.Sprintf(format, args...), p.Elapsed(), outcome)
}

// Elapsed is the time since the phase started, to a tenth of a second.
func (p *Phase) Elapsed() time.Duration {
	return time.Since(p.begin).Round(100 * time.Millisecond)
}
