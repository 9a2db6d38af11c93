package main

import (
	"strings"
	"testing"

	"github.com/idemkit/kit/idem/idemtest"
)

// sendFails answers SendMessage with 500 past the SDK's retries: the
// first send of a run when max is the SDK's 3 attempts, every send when
// max is 0.
func sendFails(max int) *idemtest.Faults {
	return &idemtest.Faults{Rates: map[idemtest.FaultKind]float64{idemtest.FaultServerError: 1}, Operations: []string{"SendMessage"}, Max: max}
}

// TestDLQRedriveExitCode: -redrive --yes whose every send fails exits 1,
// with the count on stderr; -json still prints each message's action.
func TestDLQRedriveExitCode(t *testing.T) {
	f := setup(t)
	d := newDeadLetters(t, f.sqsClient(), false, "credits")
	d.fail(t, "credits", `{"account":"acc-1","cents":100}`, nil, "", "")
	d.fail(t, "credits", `{"account":"acc-2","cents":5}`, nil, "", "")
	f.faultSQS(t, sendFails(0))

	out, errOut, code := f.run(t, "dlq", "-queue", d.dlq, "-redrive", "--yes", "-json")
	t.Logf("idem dlq -redrive --yes -json, every send failing\n%s%s", out, errOut)
	if code != exitFail {
		t.Errorf("expect exit %d, got %d", exitFail, code)
	}
	contains(t, "stderr", errOut, "idem dlq: 2 messages not sent or not deleted")
	got := classes(t, out)
	if len(got) != 2 {
		t.Fatalf("expect two lines, got %d:\n%s", len(got), out)
	}
	for k, m := range got {
		if m.Class != classNever || !strings.HasPrefix(m.Action, "not sent: ") {
			t.Errorf("%s: expect never-applied, not sent, got %s %q", k, m.Class, m.Action)
		}
	}

	out, _, code = f.run(t, "dlq", "-queue", d.dlq, "-redrive", "--yes")
	if code != exitFail || !strings.Contains(out, "not done: 2 not sent or not deleted") || strings.Contains(out, "done: nothing") {
		t.Errorf("the table: expect exit 1 and \"not done\", got %d:\n%s", code, out)
	}
	f.mustRun(t, exitOK, "dlq", "-queue", d.dlq, "-redrive") // a dry run does nothing, and fails nothing
}
