package sqsconsumer_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemkit/kit/idem"
	"github.com/idemkit/kit/idem/sqsconsumer"
)

var modes = []struct {
	name string
	opt  func(*sqsconsumer.Options)
}{
	{"one transaction per record", func(*sqsconsumer.Options) {}},
	{"BatchTransactions", batchMode},
}

// TestCallbackPanicFailsItsRecordOnly: a panic in a callback the kit calls
// fails its record alone, as a *idem.PanicError naming the callback, with
// its stack logged, and commits nothing for it; the other records commit.
// Records run on worker goroutines, where an escaped panic would end the
// test binary.
func TestCallbackPanicFailsItsRecordOnly(t *testing.T) {
	for _, tc := range []struct {
		name     string
		callback string // as the log names it
		opt      func(*sqsconsumer.Options)
	}{
		{"Effect.Rejected", "Effect.Rejected panicked: no response", func(*sqsconsumer.Options) {}},
		{"Options.Key", "sqsconsumer.Options.Key panicked: no key", func(o *sqsconsumer.Options) {
			o.Key = func(rec events.SQSMessage) (string, error) {
				if rec.MessageId == "m-bad" {
					panic("no key")
				}
				return sqsconsumer.DefaultKey(rec)
			}
		}},
	} {
		for _, mode := range modes {
			t.Run(tc.name+"/"+mode.name, func(t *testing.T) {
				e := newEnv(t)
				h := newHandler(t, e.store, func(_ context.Context, rec events.SQSMessage) (idem.Effect, error) {
					if rec.MessageId != "m-bad" {
						return e.handler(rec)
					}
					// A debit the empty account refuses, whose rejection
					// response panics.
					return idem.Effect{
						Writes:   []types.TransactWriteItem{debit(e.Accounts, "acc-bad", 100)},
						Rejected: func(*idem.RejectedError) ([]byte, error) { panic("no response") },
					}, nil
				}, tc.opt, mode.opt)
				batch := events.SQSEvent{Records: []events.SQSMessage{
					record("m1", `{"account":"acc-1","cents":5}`),
					record("m-bad", `{"account":"acc-bad","cents":1}`),
					record("m3", `{"account":"acc-3","cents":7}`),
					record("m4", `{"account":"acc-4","cents":9}`),
				}}
				for d, want := range []map[idem.Outcome]int{
					{idem.Processed: 3, idem.Failed: 1},
					{idem.Duplicate: 3, idem.Failed: 1}, // the whole batch again
				} {
					resp, err := h(context.Background(), batch)
					if err != nil {
						t.Fatalf("delivery %d: want no function error, got %v", d, err)
					}
					checkFailed(t, failedIDs(resp), "m-bad")
					checkOutcomes(t, e.outcomes(t), want)
				}
				e.checkBalances(t, map[string]int{"acc-1": 5, "acc-3": 7, "acc-4": 9, "acc-bad": 0})
				if n := e.Claims(t); n != 3 {
					t.Errorf("claims: want 3 (none for m-bad), got %d", n)
				}
				line := logLine(t, e.logs.String(), "m-bad")
				if msg, _ := line["error"].(string); !strings.Contains(msg, tc.callback) {
					t.Errorf("m-bad's log line: want an error saying %q, got %q", tc.callback, msg)
				}
				if stack, _ := line["stack"].(string); !strings.Contains(stack, "panic_test.go") {
					t.Errorf("m-bad's log line: want the panic's stack, got %.300q", stack)
				}
				t.Logf("m-bad: %s", line["error"])
			})
		}
	}
}

func failedIDs(resp events.SQSEventResponse) []string {
	ids := []string{}
	for _, f := range resp.BatchItemFailures {
		ids = append(ids, f.ItemIdentifier)
	}
	return ids
}

// logLine is the first JSON log record naming messageId id.
func logLine(t *testing.T, logs, id string) map[string]any {
	t.Helper()
	for l := range strings.Lines(logs) {
		var m map[string]any
		if json.Unmarshal([]byte(l), &m) == nil && m["messageId"] == id {
			return m
		}
	}
	t.Fatalf("no log line names %s:\n%s", id, logs)
	return nil
}
