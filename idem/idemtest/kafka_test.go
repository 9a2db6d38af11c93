package idemtest_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"reflect"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/idemkit/kit/idem/idemtest"
)

// TestKafkaEvent: records are grouped under "<topic>-<partition>" in the
// order given, values base64 encoded, headers one per name in name order.
func TestKafkaEvent(t *testing.T) {
	ev := idemtest.KafkaEvent(
		idemtest.KafkaRecord("credits", 0, 15, "a", map[string]string{"traceparent": "00-x", "idempotency-key": "evt-1"}),
		idemtest.KafkaRecord("credits", 1, 3, "b", nil),
		idemtest.KafkaRecord("credits", 0, 16, "c", nil),
	)
	if len(ev.Records) != 2 || len(ev.Records["credits-0"]) != 2 || ev.Records["credits-0"][1].Offset != 16 || ev.Records["credits-1"][0].Offset != 3 {
		t.Fatalf("want credits-0 [15 16] and credits-1 [3], got %+v", ev.Records)
	}
	r := ev.Records["credits-0"][0]
	if v, _ := base64.StdEncoding.DecodeString(r.Value); string(v) != "a" || ev.EventSource != "aws:kafka" {
		t.Errorf("value %q, event source %q", r.Value, ev.EventSource)
	}
	want := []map[string]events.JSONNumberBytes{{"idempotency-key": events.JSONNumberBytes("evt-1")}, {"traceparent": events.JSONNumberBytes("00-x")}}
	if !reflect.DeepEqual(r.Headers, want) {
		t.Errorf("headers: want %v, got %v", want, r.Headers)
	}
}

// TestReplayKafka: Replay hands a Kafka batch over again as Lambda does,
// the same records each time with nothing counting the delivery, each
// delivery its own copy: what one delivery's handler does to its event
// reaches neither the next delivery nor the caller's event.
func TestReplayKafka(t *testing.T) {
	ev := idemtest.KafkaEvent(idemtest.KafkaRecord("credits", 0, 15, "a", map[string]string{"idempotency-key": "evt-1"}))
	orig := idemtest.KafkaEvent(idemtest.KafkaRecord("credits", 0, 15, "a", map[string]string{"idempotency-key": "evt-1"}))
	var seen []events.KafkaEvent
	handle := func(_ context.Context, e events.KafkaEvent) (int, error) {
		var before events.KafkaEvent // a deep copy, before this delivery's changes
		b, _ := json.Marshal(e)
		if err := json.Unmarshal(b, &before); err != nil {
			return 0, err
		}
		seen = append(seen, before)
		r := &e.Records["credits-0"][0]
		r.Value, r.Headers[0]["idempotency-key"][0] = "changed", 'X'
		e.Records["credits-9"] = nil
		return 0, nil
	}
	idemtest.Replay(context.Background(), 3, handle, ev)
	for i, s := range seen {
		if !reflect.DeepEqual(s, orig) {
			t.Errorf("delivery %d: want the original records, got %+v", i, s)
		}
	}
	if !reflect.DeepEqual(ev, orig) {
		t.Errorf("the caller's event changed: %+v", ev)
	}
}
