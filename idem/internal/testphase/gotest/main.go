// Command gotest is `go test` for `make test`: it runs `go test -json` with
// its arguments and prints what plain `go test` prints, a line for each
// package that passes and the failed tests of one that fails, and, as they
// come, the long tests' phase lines (idem/internal/testphase), which plain
// `go test` holds until the package ends and then drops when it passes.
// The packages run in parallel as under plain `go test`: -json changes
// only how their output is written.
//
//	gotest [-go GO] [go test flags] [packages]
package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
)

func main() {
	goCmd, args := "go", os.Args[1:]
	if len(args) >= 2 && args[0] == "-go" {
		goCmd, args = args[1], args[2:]
	}
	cmd := exec.Command(goCmd, append([]string{"test", "-json"}, args...)...)
	cmd.Stderr = os.Stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		fmt.Fprintln(os.Stderr, "gotest:", err)
		os.Exit(1)
	}
	// Ctrl-C reaches go test as well (the terminal signals the whole
	// group): this process outlives it to print its last lines. Notify,
	// not Ignore, which go test would inherit.
	signal.Notify(make(chan os.Signal, 1), os.Interrupt)
	if err := cmd.Start(); err != nil {
		fmt.Fprintln(os.Stderr, "gotest:", err)
		os.Exit(1)
	}
	r := newReport(os.Stdout)
	readErr := r.read(stdout)
	err = cmd.Wait()
	r.finish()
	if readErr != nil {
		fmt.Fprintln(os.Stderr, "gotest: reading go test's output:", readErr)
	}
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		os.Exit(max(exit.ExitCode(), 1))
	case err != nil:
		fmt.Fprintln(os.Stderr, "gotest:", err)
		os.Exit(1)
	case readErr != nil || r.failed:
		os.Exit(1)
	}
}
