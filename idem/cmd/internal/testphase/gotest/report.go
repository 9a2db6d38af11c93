package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
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
}

// report turns go test's events back into its plain output, phase lines
// added as they come.
type report struct {
	mu     sync.Mutex // several go tests' lines come at once
	out    io.Writer
	pkgs   map[string]*pkgOutput
	failed bool // a package failed
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

// phase is the text of a testphase line, "    file_test.go:12: phase: …".
func phase(output string) (string, bool) {
	loc, rest, ok := strings.Cut(strings.TrimLeft(output, " "), ": ")
	if !ok || !strings.Contains(loc, ".go:") {
		return "", false
	}
	text, ok := strings.CutPrefix(rest, testphase.Prefix)
	return strings.TrimRight(text, "\n"), ok
}
