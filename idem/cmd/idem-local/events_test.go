package main

import (
	"encoding/json"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
)

// TestSQSKeysAreTheFunctions: the demo re-sends each SQS record with the key
// the queue function reads from it in IdempotencyKey; for a FIFO record
// that is its group and deduplication id, so that the copies are one
// message and two groups' records two.
func TestSQSKeysAreTheFunctions(t *testing.T) {
	ms, _, err := readEvents("../../../events")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{ // sqs-credits-fifo.json's, by the body's id
		"evt_101": "acc-9/evt_101", "evt_102": "acc-7/evt_102", "evt_103": "acc-9/evt_103",
		"evt_104": "acc-7/evt_104", "evt_105": "acc-9/evt_105",
	}
	seen := 0
	for _, m := range ms {
		if m.from != "sqs-credits-fifo.json" {
			continue
		}
		seen++
		var body struct{ ID string }
		_ = json.Unmarshal(m.body, &body)
		if got := aws.ToString(m.attrs["IdempotencyKey"].StringValue); m.key != want[body.ID] || got != want[body.ID] {
			t.Errorf("record %s: want key and IdempotencyKey %q, got %q and %q", body.ID, want[body.ID], m.key, got)
		}
	}
	if seen != len(want) {
		t.Errorf("want %d records from sqs-credits-fifo.json, got %d", len(want), seen)
	}
}
