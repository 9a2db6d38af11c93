package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/idemkit/kit/idem/cmd/internal/localstack"
	"github.com/idemkit/kit/idem/idemtest"
)

func TestMain(m *testing.M) {
	if os.Getenv("IDEM_LOCAL_TEST_RUN_MAIN") == "1" {
		main() // the command itself, for TestSignalStopsEverything
		return
	}
	idemtest.Main(m)
}

func goBuild(t *testing.T, out, pkg string) {
	t.Helper()
	cmd := exec.Command("go", "build", "-tags", "lambda.norpc", "-trimpath", "-o", out, pkg) // as make builds them: one build cache entry for both
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build %s: %v\n%s", pkg, err, b)
	}
}

// TestSignalStopsEverything runs the command as a user does, stops it with
// SIGINT (Ctrl-C) or SIGTERM, and checks that every process it started is
// gone and its port is free.
func TestSignalStopsEverything(t *testing.T) {
	dir := t.TempDir()
	echo := filepath.Join(dir, "echo", "bootstrap")
	goBuild(t, echo, "../internal/localstack/testdata/echo")
	tmpl, err := localstack.ReadTemplate("../../../template.yaml")
	if err != nil {
		t.Fatal(err)
	}

	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		t.Run(sig.String(), func(t *testing.T) {
			buildDir := filepath.Join(dir, "build") // the emulator is built once
			// This test binary runs as the command (see TestMain).
			args := []string{"-template", "../../../template.yaml", "-api-addr", "127.0.0.1:0", "-receipts-addr", "127.0.0.1:0", "-build-dir", buildDir, "-ttl-sweep", "0", "-quiet"}
			for _, id := range tmpl.OfType("AWS::Serverless::Function") {
				args = append(args, "-bootstrap", id+"="+echo)
			}
			cmd := exec.Command(os.Args[0], args...)
			// The command's own servers, not the ones a test run may name.
			cmd.Env = append(os.Environ(), "IDEM_LOCAL_TEST_RUN_MAIN=1", "AWS_ENDPOINT_URL_DYNAMODB=", "AWS_ENDPOINT_URL_SQS=")
			stdout, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			var stderr strings.Builder
			cmd.Stderr = &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			exited := make(chan error, 1)
			banner := make(chan string, 1)
			go func() {
				sc := bufio.NewScanner(stdout)
				var b strings.Builder
				for sc.Scan() {
					b.WriteString(sc.Text() + "\n")
					if strings.HasPrefix(sc.Text(), "Ctrl-C stops everything") {
						banner <- b.String()
					}
				}
				_, _ = io.Copy(io.Discard, stdout)
			}()
			go func() { exited <- cmd.Wait() }()
			defer func() {
				if cmd.ProcessState == nil {
					_ = cmd.Process.Kill()
				}
				if t.Failed() {
					t.Logf("stderr:\n%s", stderr.String())
				}
			}()
			select {
			case text := <-banner:
				// A ready idem line for the stack's claims and its DLQ.
				idem := "bin/idem -local " + filepath.Join(buildDir, "stack.json") + " -table idem-local-ProcessedTable "
				for _, want := range []string{idem + "inspect -queue CreditsQueue -message-attribute IdempotencyKey=evt_002", idem + "dlq -queue CreditsDeadLetterQueue"} {
					if !strings.Contains(text, want) {
						t.Errorf("expect %q in the banner, got\n%s", want, text)
					}
				}
				// Every table, and every stream mapping, is in the banner.
				for _, id := range tmpl.OfType("AWS::DynamoDB::Table") {
					if !strings.Contains(text, "  table      "+id+" ") {
						t.Errorf("expect table %s in the banner, got\n%s", id, text)
					}
				}
				for _, id := range tmpl.OfType("AWS::Serverless::Function") {
					evs, _ := tmpl.FunctionProperties(id)["Events"].(map[string]any)
					for name, ev := range evs {
						if e, _ := ev.(map[string]any); e["Type"] == "DynamoDB" && !strings.Contains(text, "  stream     "+id+"."+name+" ") {
							t.Errorf("expect the stream mapping %s.%s in the banner, got\n%s", id, name, text)
						}
					}
				}
			case err := <-exited:
				t.Fatalf("the command exited at start: %v", err)
			case <-time.After(3 * time.Minute):
				t.Fatal("no banner within 3 minutes")
			}
			var st state
			b, err := os.ReadFile(filepath.Join(buildDir, "stack.json"))
			if err != nil || json.Unmarshal(b, &st) != nil || st.APIURL == "" || st.ReceiptsURL == "" {
				t.Fatalf("stack.json: %s, %v", b, err)
			}
			// One invoke starts an emulator and its runtime.
			resp, err := http.Post(st.APIURL+"/webhooks/credits", "application/json", strings.NewReader(`{"hello":1}`))
			if err != nil {
				t.Fatal(err)
			}
			var echoed struct {
				Event struct {
					RouteKey string `json:"routeKey"`
				} `json:"event"`
			}
			_ = json.NewDecoder(resp.Body).Decode(&echoed)
			resp.Body.Close()
			if resp.StatusCode != 200 || echoed.Event.RouteKey != "POST /webhooks/credits" {
				t.Fatalf("expect the function to echo an HTTP API event, got %d %+v", resp.StatusCode, echoed)
			}
			procs := descendants(cmd.Process.Pid)
			if len(procs) < 4 { // two servers, an emulator, its runtime
				t.Fatalf("expect at least 4 processes under the command, got %v", procs)
			}

			if err := cmd.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			select {
			case err := <-exited:
				if err != nil {
					t.Errorf("expect exit status 0 after %v, got %v", sig, err)
				}
			case <-time.After(time.Minute):
				t.Fatalf("still running a minute after %v", sig)
			}
			for _, pid := range procs {
				if syscall.Kill(pid, 0) == nil {
					t.Errorf("process %d still runs", pid)
				}
			}
			for _, u := range []string{st.APIURL, st.ReceiptsURL} {
				addr := strings.TrimPrefix(strings.TrimSuffix(u, "/receipts"), "http://")
				if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
					c.Close()
					t.Errorf("%s still listens", addr)
				}
			}
			if _, err := os.Stat(filepath.Join(buildDir, "stack.json")); !os.IsNotExist(err) {
				t.Errorf("expect stack.json removed, got %v", err)
			}
		})
	}
}

// descendants are the processes under pid, read from /proc.
func descendants(pid int) []int {
	parent := map[int]int{}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// pid (comm) state ppid …; comm may hold spaces and parentheses.
		s := string(b)
		fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
		if len(fields) > 1 {
			parent[p], _ = strconv.Atoi(fields[1])
		}
	}
	var out []int
	var walk func(int)
	walk = func(p int) {
		for c, pp := range parent {
			if pp == p {
				out = append(out, c)
				walk(c)
			}
		}
	}
	walk(pid)
	return out
}

// TestStrayArguments: a mistyped subcommand, or send asked to send nothing,
// is named with exit 2, before any stack starts or any message is sent.
func TestStrayArguments(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"sned", "{}"}, `unexpected argument "sned": the one subcommand is send`},
		{[]string{"-quiet", "bogus"}, `unexpected argument "bogus"`},
		{[]string{"send", "-n", "0", "{}"}, "-n is 0; send the message at least once"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			cmd := exec.Command(os.Args[0], tc.args...) // this test binary runs as the command (see TestMain)
			cmd.Env = append(os.Environ(), "IDEM_LOCAL_TEST_RUN_MAIN=1")
			out, err := cmd.CombinedOutput()
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != 2 || !strings.Contains(string(out), tc.want) {
				t.Errorf("want exit 2 and %q, got %v:\n%s", tc.want, err, out)
			}
		})
	}
}
