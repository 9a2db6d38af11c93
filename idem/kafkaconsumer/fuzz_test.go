package kafkaconsumer_test

// A fuzz target for what a producer (or a direct invoke) controls in a
// record's key: its headers, as the JSON Lambda writes them, and its
// topic, partition and offset. Run the seeds with go test; explore with
// make fuzz.

import (
	"bytes"
	"encoding/json"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/aws/aws-lambda-go/events"

	"github.com/idemkit/kit/idem/kafkaconsumer"
)

// FuzzKey: headers that aws-lambda-go decodes never make reading a key
// panic; DefaultKey is its documented order (the idempotency-key header,
// whose every copy must hold one non-empty UTF-8 value, stopping at its
// error; else the record's place), and the place reads back to the
// topic, partition and offset it came from.
func FuzzKey(f *testing.F) {
	f.Add(`[{"idempotency-key":[101,118,116,45,49]}]`, "credits", int64(0), int64(15))
	f.Add(`[{"headerKey":[118,-36,0,127,-128]}]`, "credits", int64(3), int64(0))
	f.Add(`[{"idempotency-key":[97]},{"idempotency-key":[98]}]`, "credits", int64(0), int64(1))
	f.Add(`[{"idempotency-key":[97]},{"traceparent":[48]},{"idempotency-key":[97]}]`, "credits", int64(0), int64(1))
	f.Add(`[{"idempotency-key":[]}]`, "credits", int64(0), int64(1))
	f.Add(`[{"idempotency-key":null}]`, "a/b%2F", int64(0), int64(1))
	f.Add(`[{"idempotency-key":[-1,-2]}]`, "credits", int64(0), int64(1))
	f.Add(`[]`, "", int64(-1), int64(-9223372036854775808))
	f.Fuzz(func(t *testing.T, headersJSON, topic string, partition, offset int64) {
		var hs []map[string]events.JSONNumberBytes
		if json.Unmarshal([]byte(headersJSON), &hs) != nil {
			return // the runtime refuses such an event before any handler
		}
		rec := events.KafkaRecord{Topic: topic, Partition: partition, Offset: offset, Headers: hs}
		got, err := kafkaconsumer.DefaultKey(rec)

		var vals [][]byte
		for _, h := range hs {
			if v, ok := h[kafkaconsumer.KeyHeader]; ok {
				vals = append(vals, v)
			}
		}
		if len(vals) > 0 {
			usable := len(vals[0]) > 0 && utf8.Valid(vals[0])
			for _, v := range vals[1:] {
				usable = usable && bytes.Equal(v, vals[0])
			}
			switch {
			case usable && (err != nil || got != string(vals[0])):
				t.Fatalf("headers %s: want key %q, got %q, %v", headersJSON, vals[0], got, err)
			case !usable && err == nil:
				t.Fatalf("headers %s: an unusable key header was taken (or skipped over) as %q", headersJSON, got)
			}
			return
		}
		if partition < 0 || offset < 0 {
			if err == nil {
				t.Fatalf("partition %d, offset %d: want refused, got %q", partition, offset, got)
			}
			return
		}
		parts := strings.Split(got, "/")
		if err != nil || len(parts) != 3 {
			t.Fatalf("topic %q: want a place of 3 parts, got %q, %v", topic, got, err)
		}
		if tp, uerr := url.PathUnescape(parts[0]); uerr != nil || tp != topic || parts[1] != strconv.FormatInt(partition, 10) || parts[2] != strconv.FormatInt(offset, 10) {
			t.Fatalf("%q/%d/%d: the key %q reads back as %q, %s, %s (%v)", topic, partition, offset, got, tp, parts[1], parts[2], uerr)
		}
	})
}
