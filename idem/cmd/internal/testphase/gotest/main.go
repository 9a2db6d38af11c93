// Command gotest is `go test` for `make test`: it runs `go test -json` with
// its arguments and prints what plain `go test` prints, a line for each
// package that passes and the failed tests of one that fails, and, as they
// come, the long tests' phase lines (idem/cmd/internal/testphase), which plain
// `go test` holds until the package ends and then drops when it passes.
// The packages run in parallel as under plain `go test`: -json changes
// only how their output is written.
//
//	gotest [-go GO] [-C DIR]... [-first DIR]... [-events FILE] [go test flags] [packages]
//
// Each -C names a module's directory; their tests run at once, one go
// test each, with the same flags and packages (default: the current
// directory's module). Each -first names a package's directory inside one
// of them: its module's go test starts it before its other packages, with
// one more package at a time (-p) than it would run otherwise, so that a
// package much longer than the others runs beside them from the start
// instead of waiting for a turn and ending the run alone. The packages
// are the arguments after the last flag, so a flag's value must be joined
// to it (-run=X, not -run X). -events writes go test's -json lines,
// every module's, to FILE, for a test's subtests' times or its whole log.
// The last lines name the ten slowest packages and the ten slowest
// top-level tests, with their times.
package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
)

func main() {
	goCmd, args := "go", os.Args[1:]
	var dirs, first []string // -C: the modules to test, each by its directory; -first: packages to start first
	var eventsFile string
	for len(args) >= 2 && slices.Contains([]string{"-go", "-C", "-first", "-events"}, args[0]) {
		switch args[0] {
		case "-go":
			goCmd = args[1]
		case "-C":
			dirs = append(dirs, args[1])
		case "-first":
			first = append(first, args[1])
		case "-events":
			eventsFile = args[1]
		}
		args = args[2:]
	}
	if len(dirs) == 0 {
		dirs = []string{"."}
	}
	runs, err := plan(dirs, first, args, runtime.GOMAXPROCS(0))
	if err != nil {
		fmt.Fprintln(os.Stderr, "gotest:", err)
		os.Exit(2)
	}
	// Ctrl-C reaches go test as well (the terminal signals the whole
	// group): this process outlives it to print its last lines. Notify,
	// not Ignore, which go test would inherit.
	signal.Notify(make(chan os.Signal, 1), os.Interrupt)
	r := newReport(os.Stdout)
	if eventsFile != "" {
		f, err := os.Create(eventsFile)
		if err != nil {
			fmt.Fprintln(os.Stderr, "gotest:", err)
			os.Exit(1)
		}
		r.events = f // unbuffered: every line is in the file as it comes
	}
	// The modules' tests run at once, as one go test runs its packages:
	// their long tests mostly wait on their servers.
	codes := make([]int, len(runs))
	var wg sync.WaitGroup
	for i, rn := range runs {
		wg.Go(func() { codes[i] = run(r, goCmd, rn.dir, rn.args) })
	}
	wg.Wait()
	r.finish()
	r.slowest(10)
	code := 0
	for _, c := range codes {
		code = max(code, c)
	}
	if r.failed {
		code = max(code, 1)
	}
	os.Exit(code)
}

// moduleRun is one module's go test: its directory and go test's
// arguments after -json.
type moduleRun struct {
	dir  string
	args []string
}

// plan is each module's go test: args as given, except in a module holding
// a -first package, which gets it ahead of the packages and a -p of procs+1
// (unless args set -p).
func plan(dirs, first, args []string, procs int) ([]moduleRun, error) {
	flags, pkgs := args, []string(nil)
	for i := len(args); i > 0 && !strings.HasPrefix(args[i-1], "-"); i-- {
		flags, pkgs = args[:i-1], args[i-1:]
	}
	if len(pkgs) == 0 {
		pkgs = []string{"."} // go test's default
	}
	extra := make([][]string, len(dirs)) // each module's -first packages, as ./path inside it
	for _, f := range first {
		// The innermost module holding it: idem/cmd, not the root.
		in := -1
		for i, d := range dirs {
			if isUnder(f, d) && (in < 0 || isUnder(d, dirs[in])) {
				in = i
			}
		}
		if in < 0 {
			return nil, fmt.Errorf("-first %s: in none of the modules %v", f, dirs)
		}
		rel, _ := filepath.Rel(dirs[in], f)
		extra[in] = append(extra[in], "./"+filepath.ToSlash(rel))
	}
	runs := make([]moduleRun, len(dirs))
	for i, d := range dirs {
		a := slices.Clone(args)
		if len(extra[i]) > 0 {
			a = slices.Clone(flags)
			if !slices.ContainsFunc(flags, func(s string) bool { return s == "-p" || strings.HasPrefix(s, "-p=") }) {
				a = append(a, fmt.Sprint("-p=", procs+len(extra[i])))
			}
			a = append(append(a, extra[i]...), pkgs...)
		}
		runs[i] = moduleRun{dir: d, args: a}
	}
	return runs, nil
}

// isUnder says whether path is dir or inside it.
func isUnder(path, dir string) bool {
	rel, err := filepath.Rel(dir, path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}

// run runs go test -json in dir with args, its events into r, and returns
// its exit code.
func run(r *report, goCmd, dir string, args []string) int {
	cmd := exec.Command(goCmd, append([]string{"test", "-C", dir, "-json"}, args...)...)
	cmd.Stderr = os.Stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		fmt.Fprintln(os.Stderr, "gotest:", err)
		return 1
	}
	if err := cmd.Start(); err != nil {
		fmt.Fprintln(os.Stderr, "gotest:", err)
		return 1
	}
	readErr := r.read(stdout)
	err = cmd.Wait()
	if readErr != nil {
		fmt.Fprintln(os.Stderr, "gotest: reading go test's output:", readErr)
	}
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		return max(exit.ExitCode(), 1)
	case err != nil:
		fmt.Fprintln(os.Stderr, "gotest:", err)
		return 1
	case readErr != nil:
		return 1
	}
	return 0
}
