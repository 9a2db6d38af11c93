package chaos_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/idemkit/kit/idem/cmd/internal/localstack"
	"github.com/idemkit/kit/idem/cmd/internal/testphase"
	"github.com/idemkit/kit/idem/idemtest"
)

// functionTimeout is the functions' Lambda timeout under the emulator, in
// whole seconds as it reads it. It must exceed the queue adapter's 2 s
// DeadlineMargin, or no record would start, with room for a cold start on
// a loaded machine.
const functionTimeout = 4

// TestKilledAndTimedOut runs the real functions/queue and functions/webhook
// bootstraps under the Lambda Runtime Interface Emulator and ends each
// first invoke at a point inside its handler, through a proxy in front of
// DynamoDB: killed (SIGKILL) before its transaction is sent, killed after
// the transaction committed but before the answer, frozen until the Lambda
// timeout, or left without an answer past the adapter's deadline margin.
// The same event, redelivered to a fresh emulator, must leave each credit
// applied exactly once; the claims counted between the two invokes show
// the first one ended where it was meant to.
func TestKilledAndTimedOut(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the functions and runs them under the emulator")
	}
	cases := []struct {
		name    string
		fn      string // "queue" or "webhook"
		act     act
		skip    int // transactions let through before the act
		records int // records in the queue's batch
		// committed bounds the claims the first invoke leaves: exact for
		// one record, a range for records run concurrently.
		committed [2]int
		// first is how the first invoke ends: a *FunctionError type, or
		// "failures" for a batch response naming every record.
		first string
	}{
		{"queue killed before the transaction is sent", "queue", killBefore, 0, 1, [2]int{0, 0}, "Runtime."},
		{"queue killed after the commit, before the answer", "queue", killAfter, 0, 1, [2]int{1, 1}, "Runtime."},
		{"queue frozen after the commit until the Lambda timeout", "queue", freezeAfter, 0, 1, [2]int{1, 1}, "Sandbox.Timedout"},
		{"queue answer held past the deadline margin", "queue", holdAnswer, 0, 1, [2]int{1, 1}, "failures"},
		{"queue killed before the third transaction of four is sent", "queue", killBefore, 2, 4, [2]int{2, 3}, "Runtime."},
		{"queue timed out with its transaction unsent, sent after the redelivery", "queue", holdRequest, 0, 1, [2]int{0, 0}, "Sandbox.Timedout"},
		{"webhook killed before the transaction is sent", "webhook", killBefore, 0, 1, [2]int{0, 0}, "Runtime."},
		{"webhook killed after the commit, before the answer", "webhook", killAfter, 0, 1, [2]int{1, 1}, "Runtime."},
		{"webhook frozen after the commit until the Lambda timeout", "webhook", freezeAfter, 0, 1, [2]int{1, 1}, "Sandbox.Timedout"},
	}
	phase := testphase.Start(t, "kill tests", "the queue and webhook functions under the emulator, the first invoke killed, frozen or held back, the event redelivered, %d cases", len(cases))
	bin := buildFunctions(t, phase)
	passed := 0
	for _, tc := range cases {
		if t.Run(tc.name, func(t *testing.T) {
			tb := newTables(t)
			px := newProxy(t, idemtest.Endpoint(t))
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			event, want := creditEvent(tc.fn, tc.records)

			first := bin.function(t, tc.fn, px.url, tb)
			px.arm(tc.act, tc.skip, first.victim)
			out, err := first.Invoke(ctx, event)
			px.waitActed(t)
			checkFirst(t, tc.first, tc.records, out, err)
			first.Stop()
			claims := len(tb.scan(t, tb.processed, "pk", "expiresAt"))
			if claims < tc.committed[0] || claims > tc.committed[1] {
				t.Fatalf("after the first invoke: want %d to %d claim(s), got %d", tc.committed[0], tc.committed[1], claims)
			}
			t.Logf("first invoke: %s; %d claim(s)", ended(out, err), claims)

			again := bin.function(t, tc.fn, px.url, tb)
			out, err = again.Invoke(ctx, event)
			if err != nil {
				t.Fatalf("redelivery: %v\n%s", err, again.out.String())
			}
			checkRedelivery(t, tc.fn, out, claims > 0)
			if tc.act == holdRequest {
				// The dead invoke's transaction reaches DynamoDB only now,
				// after the redelivery committed: its claim must lose.
				status, body := px.release(t)
				if status != 400 || !strings.Contains(body, "TransactionCanceledException") || !strings.Contains(body, "ConditionalCheckFailed") {
					t.Fatalf("the late transaction: want 400 TransactionCanceledException (ConditionalCheckFailed), got %d %s", status, body)
				}
			}
			got := tb.scan(t, tb.accounts, "account", "balance")
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("balances: want %v (each credit once), got %v", want, got)
			}
			if n := len(tb.scan(t, tb.processed, "pk", "expiresAt")); n != tc.records {
				t.Errorf("claims: want %d, got %d", tc.records, n)
			}
		}) {
			passed++
		}
	}
	phase.End("%d of %d cases: each credit applied once", passed, len(cases))
}

// creditEvent is the event a function gets and the balances it must leave:
// for the queue, a batch of n credits to n accounts, keyed by the body's
// id; for the webhook, one credit on POST /webhooks/credits.
func creditEvent(fn string, n int) ([]byte, map[string]int) {
	want := map[string]int{}
	if fn == "webhook" {
		ev := events.APIGatewayV2HTTPRequest{Version: "2.0", RouteKey: "POST /webhooks/credits", RawPath: "/webhooks/credits",
			Headers: map[string]string{"content-type": "application/json", "idempotency-key": "evt-web-1"},
			Body:    `{"id":"evt-web-1","account":"acc-0","cents":500}`}
		ev.RequestContext.HTTP.Method = "POST"
		want["acc-0"] = 500
		b, _ := json.Marshal(ev)
		return b, want
	}
	var ev events.SQSEvent
	for i := range n {
		account, cents := fmt.Sprint("acc-", i), 100*(i+1)
		ev.Records = append(ev.Records, events.SQSMessage{MessageId: fmt.Sprint("m-", i), EventSource: "aws:sqs",
			EventSourceARN: "arn:aws:sqs:us-east-1:123456789012:credits",
			Body:           fmt.Sprintf(`{"id":"evt-%d","account":%q,"cents":%d}`, i, account, cents)})
		want[account] = cents
	}
	b, _ := json.Marshal(ev)
	return b, want
}

func checkFirst(t *testing.T, want string, records int, out []byte, err error) {
	t.Helper()
	if want == "failures" {
		var resp events.SQSEventResponse
		if err != nil || json.Unmarshal(out, &resp) != nil || len(resp.BatchItemFailures) != records {
			t.Fatalf("first invoke: want every record in batchItemFailures, got %s, %v", out, err)
		}
		return
	}
	var fe *localstack.FunctionError
	if !errors.As(err, &fe) || !strings.HasPrefix(fe.Type, want) {
		t.Fatalf("first invoke: want a function error %s…, got %s, %v", want, out, err)
	}
}

func ended(out []byte, err error) string {
	if err != nil {
		s, _, _ := strings.Cut(err.Error(), "\n")
		return s
	}
	return string(out)
}

// checkRedelivery wants the redelivery done: no record to retry, or the
// webhook's 200, a replay of the first answer when that one committed.
func checkRedelivery(t *testing.T, fn string, out []byte, committed bool) {
	t.Helper()
	if fn == "queue" {
		var resp events.SQSEventResponse
		if err := json.Unmarshal(out, &resp); err != nil || resp.BatchItemFailures == nil || len(resp.BatchItemFailures) != 0 {
			t.Fatalf("redelivery: want an empty batchItemFailures, got %s", out)
		}
		return
	}
	var resp events.APIGatewayV2HTTPResponse
	if err := json.Unmarshal(out, &resp); err != nil || resp.StatusCode != 200 || resp.Body != `{"status":"processed","id":"evt-web-1"}` {
		t.Fatalf("redelivery: want 200 processed, got %s", out)
	}
	if replayed := resp.Headers["Idempotent-Replayed"] == "true"; replayed != committed {
		t.Errorf("redelivery: want Idempotent-Replayed %v (the first invoke committed: %v), got %v", committed, committed, resp.Headers)
	}
}

// binaries are the emulator and the functions, built once per test
// binary: every test runs the same ones and only reads them.
type binaries struct{ rie, queue, webhook, relay string }

var built struct {
	once sync.Once
	bin  binaries
	err  error
}

// buildFunctions builds them for the first test that needs them, and says
// so in its phase: on a cold build cache the build is most of the phase.
func buildFunctions(t *testing.T, phase *testphase.Phase) binaries {
	t.Helper()
	built.once.Do(func() {
		if built.bin, built.err = build(filepath.Join(sharedDir, "functions")); built.err == nil {
			phase.Logf("built the emulator and the queue, webhook and relay functions")
		}
	})
	if built.err != nil {
		t.Fatal(built.err)
	}
	return built.bin
}

func build(dir string) (binaries, error) {
	root, err := filepath.Abs(filepath.Join("..", "..", "..", "..", ".."))
	if err != nil {
		return binaries{}, err
	}
	b := binaries{rie: filepath.Join(dir, "aws-lambda-rie"), queue: filepath.Join(dir, "queue", "bootstrap"), webhook: filepath.Join(dir, "webhook", "bootstrap"),
		relay: filepath.Join(dir, "relay", "bootstrap")}
	var wg sync.WaitGroup
	errs := make([]error, 4)
	// The emulator from its pinned version, outside this module's go.mod.
	wg.Go(func() { _, errs[3] = localstack.BuildRIE(context.Background(), "go", dir) })
	for i, args := range [][]string{
		// As make builds them (-trimpath), so that these and the local
		// stack's builds share one build cache entry.
		{"build", "-C", "functions", "-tags", "lambda.norpc", "-trimpath", "-o", b.queue, "./queue"},
		{"build", "-C", "functions", "-tags", "lambda.norpc", "-trimpath", "-o", b.webhook, "./webhook"},
		{"build", "-C", "functions", "-tags", "lambda.norpc", "-trimpath", "-o", b.relay, "./relay"},
	} {
		wg.Go(func() {
			cmd := exec.Command("go", args...)
			cmd.Dir = root
			cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
			if out, err := cmd.CombinedOutput(); err != nil {
				errs[i] = fmt.Errorf("go %s: %v\n%s", strings.Join(args, " "), err, out)
			}
		})
	}
	wg.Wait()
	return b, errors.Join(errs...)
}

// function is one fresh emulator running a function.
type function struct {
	*localstack.Function
	out *syncBuffer
}

// function starts fn on dynamodb and tb's tables; env adds to, or
// overrides, its environment.
func (b binaries) function(t *testing.T, fn, dynamodb string, tb *tables, env ...string) *function {
	t.Helper()
	return b.concurrentFunction(t, fn, 1, io.Discard, dynamodb, tb, env...)
}

// concurrentFunction is function in one environment that runs up to conc
// invokes at once, as on Lambda Managed Instances
// (localstack.FunctionConfig.MaxConcurrency); output gets its output too.
func (b binaries) concurrentFunction(t *testing.T, fn string, conc int, output io.Writer, dynamodb string, tb *tables, env ...string) *function {
	t.Helper()
	bootstrap := map[string]string{"queue": b.queue, "webhook": b.webhook, "relay": b.relay}[fn]
	out := &syncBuffer{}
	f := localstack.NewFunction(localstack.FunctionConfig{
		Name: fn, RIE: b.rie, Bootstrap: bootstrap, Timeout: functionTimeout * time.Second, MaxInstances: 1, MaxConcurrency: conc,
		Output: io.MultiWriter(out, output),
		Env: append([]string{
			"PATH=" + os.Getenv("PATH"),
			"AWS_LAMBDA_FUNCTION_NAME=" + fn,
			fmt.Sprint("AWS_LAMBDA_FUNCTION_TIMEOUT=", functionTimeout),
			"AWS_REGION=us-east-1", "AWS_ACCESS_KEY_ID=test", "AWS_SECRET_ACCESS_KEY=test",
			"AWS_EC2_METADATA_DISABLED=true",
			"AWS_LAMBDA_LOG_FORMAT=JSON", // as the template's LoggingConfig has Lambda set it
			"AWS_ENDPOINT_URL_DYNAMODB=" + dynamodb,
			"PROCESSED_TABLE=" + tb.processed, "ACCOUNTS_TABLE=" + tb.accounts,
			"STRIPE_WEBHOOK_SECRET=whsec_chaos", // the webhook function requires one
		}, env...),
	})
	t.Cleanup(func() {
		f.Stop()
		if t.Failed() {
			t.Logf("%s output:\n%s", fn, out.String())
		}
	})
	return &function{Function: f, out: out}
}

// victim is the function's process: the bootstrap its one emulator runs.
func (f *function) victim() (*proc, error) {
	pids := f.PIDs()
	if len(pids) != 1 {
		return nil, fmt.Errorf("want one emulator, got %v", pids)
	}
	return childOf(pids[0], "bootstrap")
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
