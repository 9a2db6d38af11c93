package sqsconsumer_test

import (
	"context"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/idemkit/kit/idem"
)

// TestFIFODeduplicationIsPerGroup: a high-throughput FIFO queue
// deduplicates within a message group, so one deduplication id in two
// groups is two messages, each applied once.
func TestFIFODeduplicationIsPerGroup(t *testing.T) {
	const body = `{"account":"acc-1","cents":100}`
	for _, tc := range []struct {
		name     string
		batch    []events.SQSMessage
		balances map[string]int
	}{
		{"content-based: one body in groups A and B", []events.SQSMessage{
			dedupRecord("a1", "A", idem.Fingerprint([]byte(body)), body),
			dedupRecord("b1", "B", idem.Fingerprint([]byte(body)), body),
		}, map[string]int{"acc-1": 200}},
		{"per-group sequence: id 1 in groups C and D", []events.SQSMessage{
			dedupRecord("c1", "C", "1", `{"account":"acc-c","cents":10}`),
			dedupRecord("d1", "D", "1", `{"account":"acc-d","cents":20}`),
		}, map[string]int{"acc-c": 10, "acc-d": 20}},
		{"a slash does not join two pairs: A/x, y and A, x/y", []events.SQSMessage{
			dedupRecord("e1", "A/x", "y", `{"account":"acc-e","cents":1}`),
			dedupRecord("f1", "A", "x/y", `{"account":"acc-e","cents":2}`),
		}, map[string]int{"acc-e": 3}},
	} {
		for _, mode := range modes {
			t.Run(tc.name+"/"+mode.name, func(t *testing.T) {
				e := newEnv(t)
				checkFailed(t, e.run(t, context.Background(), tc.batch, mode.opt))
				checkOutcomes(t, e.outcomes(t), map[idem.Outcome]int{idem.Processed: 2})
				checkFailed(t, e.run(t, context.Background(), tc.batch, mode.opt)) // delivered again
				checkOutcomes(t, e.outcomes(t), map[idem.Outcome]int{idem.Duplicate: 2})
				e.checkBalances(t, tc.balances)
			})
		}
	}
}

// dedupRecord is a FIFO record of group with deduplication id dedup.
func dedupRecord(id, group, dedup, body string) events.SQSMessage {
	r := fifo(id, group, body)
	r.Attributes["MessageDeduplicationId"] = dedup
	return r
}
