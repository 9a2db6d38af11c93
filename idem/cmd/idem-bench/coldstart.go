package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/idemkit/kit/idem/cmd/internal/localstack"
	"github.com/idemkit/kit/idem/idemtest"
)

// coldStart is one function's line of the cold-start table.
type coldStart struct {
	name string
	// Sizes of its bootstrap: as `sam build` makes it (the Makefile's
	// build-<LogicalId>, linux/arm64), the same with the symbol table
	// stripped (GOFLAGS=-ldflags=-s), and built for this machine as the
	// emulator runs it.
	lambdaBytes, strippedBytes, hostBytes int64
	// inits are the emulator's "Init Duration" of each cold start.
	inits []time.Duration
}

// invokes are events that make each reference function return at once,
// without a DynamoDB call: only INIT is measured.
var invokes = map[string]string{
	"QueueFunction":   `{"Records":[]}`,
	"LedgerFunction":  `{"Records":[]}`, // an SQS batch
	"RelayFunction":   `{"Records":[]}`, // a DynamoDB stream batch
	"WebhookFunction": `{"version":"2.0","routeKey":"$default","rawPath":"/health","headers":{},"requestContext":{"http":{"method":"GET","path":"/health"}},"isBase64Encoded":false}`,
}

// coldStarts builds every function of the template with the Makefile, as
// sam build does, and starts each n times under the Lambda Runtime
// Interface Emulator, a new environment each time.
func coldStarts(ctx context.Context, endpoint, root string, n int) ([]coldStart, error) {
	tpl, err := localstack.ReadTemplate(filepath.Join(root, "template.yaml"))
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "idem-bench-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	rie, err := localstack.BuildRIE(ctx, goCmd, dir)
	if err != nil {
		return nil, err
	}
	c := idemtest.Client(endpoint)
	processed, err := idemtest.CreateTableContext(ctx, c, idemtest.Table{Name: "cold-processed", HashKey: "pk", TTLAttribute: "expiresAt"})
	if err != nil {
		return nil, err
	}
	accounts, err := idemtest.CreateTableContext(ctx, c, idemtest.Table{Name: "cold-accounts", HashKey: "account"})
	if err != nil {
		return nil, err
	}
	// The functions the template's defaults create (not its Managed twins).
	ids, err := tpl.Created(nil, tpl.OfType("AWS::Serverless::Function"))
	if err != nil {
		return nil, err
	}
	var out []coldStart
	for _, id := range ids {
		cs := coldStart{name: id}
		host := runtime.GOOS + "/" + runtime.GOARCH
		for _, b := range []struct {
			size    *int64
			flags   string
			osArch  string
			dirName string
		}{
			{&cs.lambdaBytes, "", "", "lambda"},
			{&cs.strippedBytes, "-ldflags=-s", "", "stripped"},
			{&cs.hostBytes, "", host, "host"},
		} {
			artifacts := filepath.Join(dir, id, b.dirName)
			args := []string{"--no-print-directory", "build-" + id, "ARTIFACTS_DIR=" + artifacts}
			if b.osArch != "" {
				goos, goarch, _ := strings.Cut(b.osArch, "/")
				args = append(args, "LAMBDA_GOOS="+goos, "LAMBDA_GOARCH="+goarch)
			}
			var env []string
			if b.flags != "" {
				env = []string{"GOFLAGS=" + b.flags}
			}
			if err := command(ctx, root, env, makeCmd, append(args, "GO="+goCmd)...); err != nil {
				return nil, err
			}
			fi, err := os.Stat(filepath.Join(artifacts, "bootstrap"))
			if err != nil {
				return nil, err
			}
			*b.size = fi.Size()
		}
		env := []string{
			"PATH=" + os.Getenv("PATH"), "TZ=:UTC",
			"AWS_LAMBDA_FUNCTION_NAME=" + id, "AWS_LAMBDA_FUNCTION_MEMORY_SIZE=128", "AWS_LAMBDA_FUNCTION_TIMEOUT=10",
			"AWS_REGION=us-east-1", "AWS_DEFAULT_REGION=us-east-1", "AWS_EC2_METADATA_DISABLED=true",
			"AWS_ACCESS_KEY_ID=test", "AWS_SECRET_ACCESS_KEY=test", "AWS_ENDPOINT_URL_DYNAMODB=" + endpoint,
			"PROCESSED_TABLE=" + processed, "ACCOUNTS_TABLE=" + accounts, "LEDGER_TABLE=" + accounts, // an empty batch writes to none
			// The secrets as values: in AWS the function reads them from SSM
			// or Secrets Manager during INIT, a round trip not counted here.
			"WEBHOOK_SECRET=bench-secret", "STRIPE_WEBHOOK_SECRET=whsec_bench",
		}
		for range n {
			d, err := initDuration(ctx, id, rie, filepath.Join(dir, id, "host", "bootstrap"), env)
			if err != nil {
				return nil, err
			}
			cs.inits = append(cs.inits, d)
		}
		out = append(out, cs)
	}
	return out, nil
}

// reportLine is the emulator's REPORT line; its own "Init Duration" only
// times handing init to its sandbox, which then runs it asynchronously.
var reportLine = regexp.MustCompile(`REPORT RequestId: \S+\t(?:Init Duration: [0-9.]+ ms\t)?Duration: ([0-9.]+) ms`)

// initDuration starts a new emulator and invokes it twice. The emulator
// starts the bootstrap on the first invoke and times that invoke from
// then, so the first Duration less the second's is INIT: from starting
// the bootstrap to its first request for an event, as Lambda counts it.
func initDuration(ctx context.Context, id, rie, bootstrap string, env []string) (time.Duration, error) {
	var buf lockedBuffer
	fn := localstack.NewFunction(localstack.FunctionConfig{Name: id, RIE: rie, Bootstrap: bootstrap, Env: env, Timeout: 10 * time.Second, Output: &buf})
	defer fn.Stop()
	for range 2 {
		ev, ok := invokes[id]
		if !ok {
			return 0, fmt.Errorf("%s: idem-bench has no empty event for it (coldstart.go's invokes)", id)
		}
		if _, err := fn.Invoke(ctx, []byte(ev)); err != nil {
			return 0, fmt.Errorf("%s: invoke: %w\n%s", id, err, buf.String())
		}
	}
	// The REPORT lines follow the responses; give them a moment.
	for range 100 {
		if m := reportLine.FindAllStringSubmatch(buf.String(), -1); len(m) == 2 {
			cold, _ := strconv.ParseFloat(m[0][1], 64)
			warm, _ := strconv.ParseFloat(m[1][1], 64)
			return time.Duration((cold - warm) * float64(time.Millisecond)), nil
		}
		time.Sleep(10 * time.Millisecond)
	}
	return 0, fmt.Errorf("%s: want two REPORT lines from the emulator, got:\n%s", id, buf.String())
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// command runs a command in dir with extra environment, its output on failure.
func command(ctx context.Context, dir string, env []string, name string, args ...string) error {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("%s %s: %w\n%s", name, strings.Join(args, " "), err, bytes.TrimSpace(b))
	}
	return nil
}
