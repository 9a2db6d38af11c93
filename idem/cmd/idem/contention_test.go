package main

import (
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/idemkit/kit/idem/idemtest"
)

// faultProxy is an endpoint in front of target whose requests pass
// through f: the command's clients, pointed at it by the environment,
// meet the faults beneath the SDK's retries, as a client with
// idemtest.Faults installed does.
func faultProxy(t *testing.T, target string, f *idemtest.Faults) string {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(&httputil.ReverseProxy{Transport: f, Rewrite: func(r *httputil.ProxyRequest) {
		r.SetURL(u)
		r.Out.Host = r.In.Host
	}})
	t.Cleanup(srv.Close)
	return srv.URL
}

// faultDynamoDB points the command's DynamoDB client at faults in front
// of the local server for the rest of the test.
func (f *fixture) faultDynamoDB(t *testing.T, faults *idemtest.Faults) {
	t.Helper()
	t.Setenv("AWS_ENDPOINT_URL_DYNAMODB", faultProxy(t, idemtest.Endpoint(t), faults))
}

// TestContention: the command's own GetItem and DeleteItem meeting
// TransactionConflictException or ReplicatedWriteConflictException (a
// delivery's transaction, another Region's write) are sent again with the
// Store's backoff; past it the command says contention and to try again,
// never "no claim" or a claim deleted, and exits 1.
func TestContention(t *testing.T) {
	conflict := func(kind idemtest.FaultKind, op string, max int) *idemtest.Faults {
		return &idemtest.Faults{Rates: map[idemtest.FaultKind]float64{kind: 1}, Operations: []string{op}, Max: max}
	}
	for _, tc := range []struct {
		name   string
		faults *idemtest.Faults
		args   []string
		code   int
		want   string
		gone   bool // the claim deleted
	}{
		{"forget: DeleteItem conflicts twice", conflict(idemtest.FaultTransactionConflict, "DeleteItem", 2),
			[]string{"forget", "-queue", "credits", "-message-attribute", "IdempotencyKey=evt_1", "--yes"}, exitOK, "deleted the claim credits#evt_1", true},
		{"forget: DeleteItem conflicts past the retries", conflict(idemtest.FaultTransactionConflict, "DeleteItem", 0),
			[]string{"forget", "-queue", "credits", "-message-attribute", "IdempotencyKey=evt_1", "--yes"}, exitFail, "contention: DeleteItem credits#evt_1 met another write on the item 5 times", false},
		{"forget: another Region's write", conflict(idemtest.FaultReplicatedConflict, "DeleteItem", 0),
			[]string{"forget", "-queue", "credits", "-message-attribute", "IdempotencyKey=evt_1", "--yes"}, exitFail, "ReplicatedWriteConflictException", false},
		{"inspect: GetItem conflicts three times", conflict(idemtest.FaultTransactionConflict, "GetItem", 3),
			[]string{"inspect", "-queue", "credits", "-message-attribute", "IdempotencyKey=evt_1"}, exitOK, "Processed", false},
		{"inspect: GetItem conflicts past the retries", conflict(idemtest.FaultReplicatedConflict, "GetItem", 0),
			[]string{"inspect", "-queue", "credits", "-message-attribute", "IdempotencyKey=evt_1"}, exitFail, "contention: GetItem credits#evt_1 met another write on the item 5 times", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := setup(t)
			consume(t, f.store(time.Time{}), idemtest.SQSMessage("credits", `{"cents":5}`, map[string]string{"IdempotencyKey": "evt_1"}))
			f.faultDynamoDB(t, tc.faults)
			out, errOut := f.mustRun(t, tc.code, tc.args...)
			contains(t, "output", out+errOut, tc.want)
			if strings.Contains(errOut, "no claim") || strings.Contains(errOut, "nothing to forget") {
				t.Errorf("contention read as no claim: %s", errOut)
			}
			if gone := f.item("credits#evt_1") == nil; gone != tc.gone {
				t.Errorf("claim deleted: expect %v, got %v", tc.gone, gone)
			}
			t.Logf("idem %s (%v injected)\n%s%s", strings.Join(tc.args, " "), tc.faults.Counts(), errOut, out)
		})
	}
}

// TestNotAProcessedTable: pointed at a table keyed otherwise (the accounts
// table), every subcommand names it as not a processed-ids table, rather
// than listing 0 claims or printing the SDK's ValidationException.
func TestNotAProcessedTable(t *testing.T) {
	f := setup(t)
	d := newDeadLetters(t, f.sqsClient(), false, "credits")
	d.fail(t, "credits", `{"account":"acc-1","cents":1}`, nil, "", "")
	for _, args := range [][]string{
		{"list"},
		{"inspect", "-queue", "credits", "-message-attribute", "IdempotencyKey=evt_1"},
		{"forget", "-queue", "credits", "-message-attribute", "IdempotencyKey=evt_1"},
		{"dlq", "-queue", d.dlq},
	} {
		t.Run(args[0], func(t *testing.T) {
			out, errOut := f.mustRun(t, exitFail, append([]string{"-table", f.Accounts}, args...)...)
			contains(t, "stderr", errOut, f.Accounts+" is not a processed-ids table: its key is account (S), and the Store keys its claims by pk (S)")
			if strings.Contains(out+errOut, "ValidationException") || strings.Contains(out, "0 claims") {
				t.Errorf("expect no claim count and no raw exception, got\n%s%s", out, errOut)
			}
			t.Logf("idem -table ACCOUNTS %s\n%s", strings.Join(args, " "), errOut)
		})
	}
	if n := d.depth(t); n != 1 {
		t.Errorf("expect the DLQ message untouched and visible, got %d", n)
	}
}

// TestLocalSuggested: without a Region, in a directory where make local
// writes its state file, the command suggests -local with it.
func TestLocalSuggested(t *testing.T) {
	setup(t)
	for _, k := range []string{"AWS_REGION", "AWS_DEFAULT_REGION"} {
		t.Setenv(k, "")
		os.Unsetenv(k)
	}
	dir := t.TempDir()
	t.Chdir(dir)
	run := func() string {
		t.Helper()
		var f fixture
		f.Env = &idemtest.Env{Processed: "idem-local-ProcessedTable"}
		_, errOut := f.mustRun(t, exitUsage, "inspect", "-key", "x")
		return errOut
	}
	if errOut := run(); !strings.Contains(errOut, "no AWS Region") || strings.Contains(errOut, "-local") {
		t.Errorf("no state file: expect no suggestion, got %s", errOut)
	}
	if err := os.MkdirAll(filepath.Join(dir, "bin", "local"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, localStatePath), []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	errOut := run()
	contains(t, "stderr", errOut, "no AWS Region", "for the make local stack running here, -local bin/local/stack.json")
	t.Logf("idem -table idem-local-ProcessedTable inspect -key x\n%s", errOut)
}

// TestDLQContention: dlq's reads of claims meet contention as inspect's
// do: retried, and past the retries the run stops saying so, with every
// message read made visible again.
func TestDLQContention(t *testing.T) {
	f := setup(t)
	d := newDeadLetters(t, f.sqsClient(), false, "credits")
	d.fail(t, "credits", `{"account":"acc-1","cents":1}`, map[string]string{"IdempotencyKey": "evt_1"}, "", "")
	conflict := func(max int) *idemtest.Faults {
		return &idemtest.Faults{Rates: map[idemtest.FaultKind]float64{idemtest.FaultTransactionConflict: 1}, Operations: []string{"GetItem"}, Max: max}
	}
	f.faultDynamoDB(t, conflict(3))
	out, _ := f.mustRun(t, exitOK, "dlq", "-queue", d.dlq)
	contains(t, "retried", out, "1 never-applied")
	f.faultDynamoDB(t, conflict(0))
	_, errOut := f.mustRun(t, exitFail, "dlq", "-queue", d.dlq, "-redrive", "--yes")
	contains(t, "past the retries", errOut, "contention: GetItem credits-")
	t.Logf("idem dlq -redrive --yes, GetItem conflicting\n%s", errOut)
	if n := d.depth(t); n != 1 {
		t.Errorf("expect the message visible again, got %d", n)
	}
}
