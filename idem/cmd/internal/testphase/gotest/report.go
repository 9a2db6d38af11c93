package main

import (
	"bufio"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"

	"github.com/idemkit/kit/idem/cmd/internal/testphase"
)

// event is a line of `go test -json` (go doc test2json).
type event struct {
	Action  string
	Package string
	Test    string
	Output  string
	Elapsed float64 // seconds, on a test's or a package's pass or fail
}

// report turns go test's events back into its plain output, phase lines
// added as they come.
type report struct {
	mu     sync.Mutex // several go tests' lines come at once
	out    io.Writer
	events io.Writer // go test's lines as they came, if set (-events)
	pkgs   map[string]*pkgOutput
	failed bool     // a package failed
	times  []timing // each package and top-level test that ended
}

// timing is how long a package's tests, or one top-level test, took.
type timing struct {
	pkg, test string // test empty for the package
	seconds   float64
}

// pkgOutput is a package's output so far, kept until the package ends to
// print its failed tests if it fails.
type pkgOutput struct {
	lines  []outputLine
	passed map[string]bool // tests that passed or were skipped
}

type outputLine struct{ test, text string }

func newReport(out io.Writer) *report {
	return &report{out: out, pkgs: map[string]*pkgOutput{}}
}

func (r *report) read(in io.Reader) error {
	br := bufio.NewReader(in)
	for {
		line, err := br.ReadString('\n')
		if line != "" {
			r.line(line)
		}
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

func (r *report) line(line string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.events != nil {
		io.WriteString(r.events, line)
	}
	var e event
	if !strings.HasPrefix(line, "{") || json.Unmarshal([]byte(line), &e) != nil {
		io.WriteString(r.out, line) // not an event: go test's own words
		return
	}
	if e.Action == "build-output" { // a package that does not compile, as go test prints it
		io.WriteString(r.out, e.Output)
		return
	}
	p := r.pkgs[e.Package]
	if p == nil {
		p = &pkgOutput{passed: map[string]bool{}}
		r.pkgs[e.Package] = p
	}
	if (e.Action == "pass" || e.Action == "fail") && !strings.Contains(e.Test, "/") {
		r.times = append(r.times, timing{e.Package, e.Test, e.Elapsed})
	}
	switch e.Action {
	case "output":
		if text, ok := phase(e.Output); ok && e.Test != "" {
			fmt.Fprintf(r.out, "…   \t%s\t%s\n", e.Package, text)
		}
		p.lines = append(p.lines, outputLine{e.Test, e.Output})
	case "pass", "skip":
		if e.Test != "" {
			p.passed[e.Test] = true
			return
		}
		for _, l := range p.lines { // "ok  \tpkg\t1.2s", "?   \tpkg\t[no test files]"
			if l.test == "" && (strings.HasPrefix(l.text, "ok  ") || strings.HasPrefix(l.text, "?   ")) {
				io.WriteString(r.out, l.text)
			}
		}
		delete(r.pkgs, e.Package)
	case "fail":
		if e.Test != "" {
			return
		}
		// The package's own lines and those of every test that did not
		// pass: failed, or cut short by a panic or a timeout.
		r.failed = true
		for _, l := range p.lines {
			if l.test == "" || !p.passed[l.test] {
				io.WriteString(r.out, l.text)
			}
		}
		delete(r.pkgs, e.Package)
	}
}

// finish prints go test's last line when a package failed.
func (r *report) finish() {
	if r.failed {
		fmt.Fprintln(r.out, "FAIL")
	}
}

// slowest prints the n slowest packages and the n slowest top-level
// tests, so that a run says where its time went. A package's time is its
// test binary's run, its tests in parallel included; a test's is its own,
// without the time it waited to run beside others (t.Parallel).
func (r *report) slowest(n int) {
	for _, kind := range []string{"packages", "tests"} {
		var ts []timing
		for _, t := range r.times {
			if (t.test == "") == (kind == "packages") {
				ts = append(ts, t)
			}
		}
		if len(ts) == 0 {
			continue
		}
		slices.SortStableFunc(ts, func(a, b timing) int { return cmp.Compare(b.seconds, a.seconds) })
		fmt.Fprintf(r.out, "the %d slowest %s:\n", min(n, len(ts)), kind)
		for _, t := range ts[:min(n, len(ts))] {
			name := t.pkg
			if t.test != "" {
				name += " " + t.test
			}
			fmt.Fprintf(r.out, "%8.1fs  %s\n", t.seconds, name)
		}
	}
}

// phase is the text of a testphase line, "    file_test.go:12: phase: …".
func phase(output string) (string, bool) {
	loc, rest, ok := strings.Cut(strings.TrimLeft(output, " "), ": ")
	if !ok || !strings.Contains(loc, ".go:") {
		return "", false
	}
	text, ok := strings.CutPrefix(rest, testphase.Prefix)
	return strings.TrimRight(text, "\n"), ok
}
