package kafkaconsumer_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemkit/kit/idem"
	"github.com/idemkit/kit/idem/idemtest"
	"github.com/idemkit/kit/idem/kafkaconsumer"
)

// TestCallbackPanicFailsItsRecord: a panic in the handler or in another
// callback the kit calls fails its record (and the rest of its partition)
// as a *idem.PanicError naming the callback, with its stack logged, and
// commits nothing for it; the other partitions commit, and the process
// goes on. Partitions run on worker goroutines, where an escaped panic
// would end the test binary.
func TestCallbackPanicFailsItsRecord(t *testing.T) {
	for _, tc := range []struct {
		name     string
		callback string // as the log names it
		opt      func(*kafkaconsumer.Options)
	}{
		{"the handler", "handler panicked: kaboom", func(*kafkaconsumer.Options) {}},
		{"Effect.Rejected", "Effect.Rejected panicked: no response", func(*kafkaconsumer.Options) {}},
		{"Options.Key", "kafkaconsumer.Options.Key panicked: no key", func(o *kafkaconsumer.Options) {
			o.Key = func(rec events.KafkaRecord) (string, error) {
				if rec.Offset == 11 {
					panic("no key")
				}
				return kafkaconsumer.DefaultKey(rec)
			}
		}},
	} {
		for _, mode := range modes {
			t.Run(tc.name+"/"+mode.name, func(t *testing.T) {
				e := newEnv(t)
				h := newHandler(t, e.store, func(_ context.Context, rec events.KafkaRecord) (idem.Effect, error) {
					if rec.Offset != 11 {
						return e.handler(rec)
					}
					if tc.name == "the handler" {
						panic("kaboom")
					}
					// A debit the empty account refuses, whose rejection
					// response panics.
					return idem.Effect{
						Writes:   []types.TransactWriteItem{debit(e.Accounts, "acc-bad", 100)},
						Rejected: func(*idem.RejectedError) ([]byte, error) { panic("no response") },
					}, nil
				}, tc.opt, mode.opt)
				batch := idemtest.KafkaEvent(
					rec(0, 10, `{"account":"acc-1","cents":5}`, ""),
					rec(0, 11, `{"account":"acc-bad","cents":1}`, ""),
					rec(0, 12, `{"account":"acc-1","cents":7}`, ""),
					rec(1, 40, `{"account":"acc-4","cents":9}`, ""),
				)
				for d, want := range []map[idem.Outcome]int{
					{idem.Processed: 2, idem.Failed: 2},
					{idem.Duplicate: 2, idem.Failed: 2}, // the whole batch again
				} {
					resp, err := h(context.Background(), batch)
					if err != nil {
						t.Fatalf("delivery %d: want no function error, got %v", d, err)
					}
					checkFailed(t, failed(t, resp), "credits-0@11", "credits-0@12")
					checkOutcomes(t, e.seen.take(), want)
				}
				e.checkBalances(t, map[string]int{"acc-1": 5, "acc-4": 9, "acc-bad": 0})
				if n := e.Claims(t); n != 2 {
					t.Errorf("claims: want 2 (none for offset 11), got %d", n)
				}
				line := logLine(t, e.logs.String(), 11)
				if msg, _ := line["error"].(string); !strings.Contains(msg, tc.callback) {
					t.Errorf("offset 11's log line: want an error saying %q, got %q", tc.callback, msg)
				}
				if stack, _ := line["stack"].(string); !strings.Contains(stack, "panic_test.go") {
					t.Errorf("offset 11's log line: want the panic's stack, got %.300q", stack)
				}
			})
		}
	}
}

// debit takes cents from the balance of account in table if it holds that
// much: the condition fails on an empty account.
func debit(table, account string, cents int) types.TransactWriteItem {
	w, err := idem.Update(table, map[string]string{"account": account}, expression.Add(expression.Name("balance"), expression.Value(-cents)),
		expression.Name("balance").GreaterThanEqual(expression.Value(cents)))
	if err != nil {
		panic(err) // a constant expression: cannot fail
	}
	return w
}

// logLine is the first JSON log record naming offset.
func logLine(t *testing.T, logs string, offset int64) map[string]any {
	t.Helper()
	for l := range strings.Lines(logs) {
		var m map[string]any
		if json.Unmarshal([]byte(l), &m) == nil && m["offset"] == float64(offset) {
			return m
		}
	}
	t.Fatalf("no log line names offset %d:\n%s", offset, logs)
	return nil
}
