package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
)

// Exit codes: a script tells "done" from "did not" from "asked wrongly".
const (
	exitOK    = 0 // done, or a dry run that showed what it would do
	exitFail  = 1 // not found, refused, AWS failed, or some of what was asked not done: see stderr
	exitUsage = 2 // bad input: nothing was read or written
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// usageError is bad input: a clear message and exit code 2.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usagef(format string, a ...any) error { return &usageError{fmt.Sprintf(format, a...)} }

// failure is an error already explained on stderr, or a refusal: exit 1.
type failure struct{ msg string }

func (e *failure) Error() string { return e.msg }

func failf(format string, a ...any) error { return &failure{fmt.Sprintf(format, a...)} }

// A subcommand reads its flags into fs (which already holds the global
// flags), then runs.
type subcommand struct {
	summary string
	flags   func(fs *flag.FlagSet) func(ctx context.Context, e *env) error
}

var subcommands = map[string]subcommand{
	"inspect": {"show one claim: outcome, times, fingerprint, answer, lease, outbox messages", inspectFlags},
	"list":    {"list claims by source, time and outcome (a Scan whose cost is shown first)", listFlags},
	"forget":  {"delete a final claim, so that its message is processed again", forgetFlags},
	"dlq":     {"classify a dead-letter queue's messages against their claims; redrive the never-applied", dlqFlags},
}

var subcommandOrder = []string{"inspect", "list", "forget", "dlq"}

// run is the command: main's body, which tests call in-process.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	var g globals
	top := flag.NewFlagSet("idem", flag.ContinueOnError)
	top.SetOutput(io.Discard)
	g.register(top)
	if err := top.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			usage(stdout, top)
			return exitOK
		}
		fmt.Fprintf(stderr, "idem: %v\n(idem -h for help)\n", err)
		return exitUsage
	}
	if top.NArg() == 0 {
		usage(stderr, top)
		return exitUsage
	}
	name := top.Arg(0)
	if name == "help" {
		usage(stdout, top)
		return exitOK
	}
	sub, ok := subcommands[name]
	if !ok {
		fmt.Fprintf(stderr, "idem: unknown subcommand %q; want one of %s\n(idem -h for help)\n", name, strings.Join(subcommandOrder, ", "))
		return exitUsage
	}
	fs := flag.NewFlagSet("idem "+name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	g.register(fs) // the global flags may follow the subcommand too
	runSub := sub.flags(fs)
	if err := fs.Parse(top.Args()[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			subUsage(stdout, name, sub, fs)
			return exitOK
		}
		fmt.Fprintf(stderr, "idem %s: %v\n(idem %s -h for help)\n", name, err, name)
		return exitUsage
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "idem %s: unexpected argument %q: every input is a flag\n(idem %s -h for help)\n", name, fs.Arg(0), name)
		return exitUsage
	}
	e, err := g.open(ctx, stdout, stderr)
	if err == nil {
		err = runSub(ctx, e)
	}
	var ue *usageError
	var fe *failure
	switch {
	case err == nil:
		return exitOK
	case errors.As(err, &ue):
		fmt.Fprintf(stderr, "idem %s: %v\n(idem %s -h for help)\n", name, err, name)
		return exitUsage
	case errors.As(err, &fe):
		fmt.Fprintf(stderr, "idem %s: %v\n", name, err)
		return exitFail
	}
	fmt.Fprintf(stderr, "idem %s: %v\n", name, err)
	return exitFail
}

func usage(w io.Writer, top *flag.FlagSet) {
	fmt.Fprint(w, `idem: look at and repair an idemkit processed-ids table and its dead-letter queues

usage: idem -table TABLE [global flags] SUBCOMMAND [flags]

subcommands:
`)
	for _, name := range subcommandOrder {
		fmt.Fprintf(w, "  %-8s %s\n", name, subcommands[name].summary)
	}
	fmt.Fprint(w, "\nglobal flags (before or after the subcommand):\n")
	printFlags(w, top)
	fmt.Fprint(w, `
AWS credentials, Region and endpoints come from the SDK's default chain
(AWS_PROFILE, AWS_REGION, AWS_ENDPOINT_URL_DYNAMODB, AWS_ENDPOINT_URL_SQS,
AWS_ENDPOINT_URL, ...), or from -local for a running make local stack.
Nothing is deleted or sent without --yes. Exit status: 0 done, all of
it (or a dry run); 1 not found, refused or failed, or anything asked not
done (dlq: a message not sent or not deleted, counted on stderr); 2 bad
input, nothing read or written.
The runbook: go doc github.com/idemkit/kit/idem/cmd/idem
`)
}

func subUsage(w io.Writer, name string, sub subcommand, fs *flag.FlagSet) {
	fmt.Fprintf(w, "idem %s: %s\n\nusage: idem -table TABLE %s [flags]\n\nflags (the global flags are accepted too: idem -h):\n", name, sub.summary, name)
	global := flag.NewFlagSet("", flag.ContinueOnError)
	new(globals).register(global)
	own := flag.NewFlagSet("", flag.ContinueOnError)
	fs.VisitAll(func(f *flag.Flag) {
		if global.Lookup(f.Name) == nil {
			own.Var(f.Value, f.Name, f.Usage)
		}
	})
	printFlags(w, own)
}

func printFlags(w io.Writer, fs *flag.FlagSet) {
	fs.SetOutput(w)
	fs.PrintDefaults()
	fs.SetOutput(io.Discard)
}
