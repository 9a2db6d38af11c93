// Command gotest is `go test` for `make test`: it runs `go test -json` with
// its arguments and prints what plain `go test` prints, a line for each
// package that passes and the failed tests of one that fails, and, as they
// come, the long tests' phase lines (idem/cmd/internal/testphase), which plain
// `go test` holds until the package ends and then drops when it passes.
// The packages run in parallel as under plain `go test`: -json changes
// only how their output is written.
//
//	gotest [-go GO] [-C DIR]... [-events FILE] [go test flags] [packages]
//
// Each -C names a module's directory; their tests run at once, one go
// test each, with the same flags and packages (default: the current
// directory's module). -events writes go test's -json lines, every
// module's, to FILE, for a test's subtests' times or its whole log. Its
// last lines name the ten slowest packages and
// the ten slowest top-level tests, with their times.
package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"sync"
)

func main() {
	goCmd, args := "go", os.Args[1:]
	var dirs []string // -C: the modules to test, each by its directory
	var eventsFile string
	for len(args) >= 2 && (args[0] == "-go" || args[0] == "-C" || args[0] == "-events") {
		switch args[0] {
		case "-go":
			goCmd = args[1]
		case "-C":
			dirs = append(dirs, args[1])
		case "-events":
			eventsFile = args[1]
		}
		args = args[2:]
	}
	if len(dirs) == 0 {
		dirs = []string{"."}
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
	codes := make([]int, len(dirs))
	var wg sync.WaitGroup
	for i, dir := range dirs {
		wg.Go(func() { codes[i] = run(r, goCmd, dir, args) })
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
