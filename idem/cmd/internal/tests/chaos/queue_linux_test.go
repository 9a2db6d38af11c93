package chaos_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/idemkit/kit/idem"
	"github.com/idemkit/kit/idem/cmd/internal/testphase"
	"github.com/idemkit/kit/idem/idemtest"
)

// TestQueueFunctionKeysFIFOByGroup runs the real functions/queue bootstrap
// under the emulator on FIFO batches a high-throughput queue
// (DeduplicationScope messageGroup) delivers: one deduplication id in two
// message groups is two messages there. Each must be credited once, none
// failed, and the same event delivered again credits nothing more.
func TestQueueFunctionKeysFIFOByGroup(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the functions and runs them under the emulator")
	}
	const body = `{"account":"acc-1","cents":100}`
	cases := []struct {
		name    string
		records []events.SQSMessage
		want    map[string]int
	}{
		// Content-based deduplication: the id is the body's SHA-256.
		{"one body in groups A and B", []events.SQSMessage{
			fifoRecord("m-a", "A", idem.Fingerprint([]byte(body)), body),
			fifoRecord("m-b", "B", idem.Fingerprint([]byte(body)), body),
		}, map[string]int{"acc-1": 200}},
		// The producer numbers each group's messages.
		{"id 1 in groups C and D, other bodies", []events.SQSMessage{
			fifoRecord("m-c", "C", "1", `{"account":"acc-c","cents":10}`),
			fifoRecord("m-d", "D", "1", `{"account":"acc-d","cents":20}`),
		}, map[string]int{"acc-c": 10, "acc-d": 20}},
	}
	phase := testphase.Start(t, "FIFO groups", "the queue function on FIFO batches, one deduplication id in two groups, %d cases, each delivered twice", len(cases))
	bin := buildFunctions(t, phase)
	passed := 0
	for _, tc := range cases {
		if t.Run(tc.name, func(t *testing.T) {
			tb := newTables(t)
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			fn := bin.function(t, "queue", idemtest.Endpoint(t), tb)
			event, _ := json.Marshal(events.SQSEvent{Records: tc.records})
			seen := 0
			for _, delivery := range []string{"first", "again"} {
				out, err := fn.Invoke(ctx, event)
				failed := batchFailures(t, out, err)
				got := tb.scan(t, tb.accounts, "account", "balance")
				lines := functionLines(fn.out.String())
				counted := countOutcomes(lines[seen:])
				seen = len(lines)
				t.Logf("%s delivery: failed %q; outcomes %v; balances %v", delivery, failed, counted, got)
				if len(failed) != 0 {
					t.Errorf("%s delivery: want no record failed, got %q", delivery, failed)
				}
				if fmt.Sprint(got) != fmt.Sprint(tc.want) {
					t.Errorf("%s delivery: balances: want %v (each message once), got %v", delivery, tc.want, got)
				}
			}
			claims := tb.scan(t, tb.processed, "pk", "expiresAt")
			t.Logf("claims: %v", keys(claims))
			if len(claims) != 2 {
				t.Errorf("claims: want 2, got %d", len(claims))
			}
		}) {
			passed++
		}
	}
	phase.End("%d of %d cases: each message credited once", passed, len(cases))
}

// TestQueueFunctionAnswerCutAfterCommit: the proxy lets one record's
// transaction commit and cuts DynamoDB's answer in half, as a connection
// lost mid-body does. The function may not know whether it committed: the
// record must be failed for retry as a RetryableError (not a StoreError,
// which says nothing was committed), the other record unharmed, and no
// function error. The redelivery of the event finds both claims: Duplicate,
// each credit once.
func TestQueueFunctionAnswerCutAfterCommit(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the functions and runs them under the emulator")
	}
	phase := testphase.Start(t, "answer cut after the commit", "the queue function, DynamoDB's answer to one record's commit cut in half, then the batch again")
	bin := buildFunctions(t, phase)
	tb := newTables(t)
	px := newProxy(t, idemtest.Endpoint(t))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	event, want := creditEvent("queue", 2)

	fn := bin.function(t, "queue", px.url, tb)
	px.arm(cutAnswer, 0, nil)
	out, err := fn.Invoke(ctx, event)
	px.waitActed(t)
	failed := batchFailures(t, out, err)
	if len(failed) != 1 {
		t.Fatalf("first invoke: want the cut record alone in batchItemFailures, got %q", failed)
	}
	claims := len(tb.scan(t, tb.processed, "pk", "expiresAt"))
	if claims != 2 {
		t.Fatalf("after the first invoke: want 2 claims (the cut one committed), got %d", claims)
	}
	lines := fn.waitLines(t, func(lines []map[string]any) bool { return failedLine(lines, failed[0]) != nil })
	line := failedLine(lines, failed[0])
	msg, _ := line["error"].(string)
	t.Logf("first invoke: failed %q; %d answer(s) cut; %d claims; logged: %s", failed, px.cutAnswers(), claims, msg)
	if !strings.Contains(msg, "transient failure") || strings.Contains(msg, ": store: ") {
		t.Errorf("the cut record: want a RetryableError (it may have committed), got %q", msg)
	}

	seen := len(lines)
	out, err = fn.Invoke(ctx, event)
	if failed := batchFailures(t, out, err); len(failed) != 0 {
		t.Fatalf("redelivery: want no record failed, got %q", failed)
	}
	lines = fn.waitLines(t, func(lines []map[string]any) bool { return total(countOutcomes(lines[seen:])) >= 2 })
	counted := countOutcomes(lines[seen:])
	got := tb.scan(t, tb.accounts, "account", "balance")
	t.Logf("redelivery: outcomes %v; balances %v", counted, got)
	if counted[idem.Duplicate] != 2 || len(counted) != 1 {
		t.Errorf("redelivery: want 2 Duplicate, got %v", counted)
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("balances: want %v (each credit once), got %v", want, got)
	}
	phase.End("the cut record failed for retry, %d Duplicate on the redelivery", counted[idem.Duplicate])
}

// fifoRecord is a record of a FIFO queue's message group.
func fifoRecord(id, group, dedup, body string) events.SQSMessage {
	return events.SQSMessage{MessageId: id, Body: body, EventSource: "aws:sqs",
		EventSourceARN: "arn:aws:sqs:us-east-1:123456789012:credits.fifo",
		Attributes:     map[string]string{"MessageGroupId": group, "MessageDeduplicationId": dedup}}
}

// batchFailures reads a batch response, which must not be a function error.
func batchFailures(t *testing.T, out []byte, err error) []string {
	t.Helper()
	var resp events.SQSEventResponse
	if err != nil || json.Unmarshal(out, &resp) != nil || resp.BatchItemFailures == nil {
		t.Fatalf("want a batch response, got %s, %v", out, err)
	}
	ids := []string{}
	for _, f := range resp.BatchItemFailures {
		ids = append(ids, f.ItemIdentifier)
	}
	return ids
}

// functionLines are the JSON lines of the function's output, its logs and
// metrics, in order; the emulator prefixes each line with the instance.
func functionLines(out string) []map[string]any {
	var lines []map[string]any
	for l := range strings.Lines(out) {
		i := strings.IndexByte(l, '{')
		var m map[string]any
		if i >= 0 && json.Unmarshal([]byte(l[i:]), &m) == nil {
			lines = append(lines, m)
		}
	}
	return lines
}

// countOutcomes counts the EMF lines by outcome.
func countOutcomes(lines []map[string]any) map[idem.Outcome]int {
	n := map[idem.Outcome]int{}
	for _, m := range lines {
		if _, ok := m["_aws"]; !ok {
			continue
		}
		for _, oc := range allOutcomes {
			if _, ok := m[string(oc)]; ok {
				n[oc]++
			}
		}
	}
	return n
}

// waitLines waits up to 10 seconds for the function's log lines to hold
// what enough looks for, and returns them: the emulator copies the
// function's output through a pipe, and CI read it on a loaded machine
// before the lines of an invoke that had answered came through.
func (f *function) waitLines(t *testing.T, enough func([]map[string]any) bool) []map[string]any {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		lines := functionLines(f.out.String())
		if enough(lines) || time.Now().After(deadline) {
			return lines
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// total is how many outcomes counted holds.
func total(counted map[idem.Outcome]int) int {
	n := 0
	for _, c := range counted {
		n += c
	}
	return n
}

// failedLine is the Failed log record of the record messageID.
func failedLine(lines []map[string]any, messageID string) map[string]any {
	for _, m := range lines {
		if m["message"] == "idem: "+string(idem.Failed) && m["messageId"] == messageID { // Lambda's JSON: "message", not slog's "msg"
			return m
		}
	}
	return nil
}

func keys(m map[string]int) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
