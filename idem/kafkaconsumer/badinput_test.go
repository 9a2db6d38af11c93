package kafkaconsumer_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemkit/kit/idem"
	"github.com/idemkit/kit/idem/idemtest"
	"github.com/idemkit/kit/idem/kafkaconsumer"
)

// strictCredit refuses any value that is not one JSON object in valid
// UTF-8 with a non-empty "account" and positive whole "cents": JSONHandler
// checks the JSON and the types, the handler the rest.
func strictCredit(e *env) kafkaconsumer.Handler {
	type body struct {
		Account string `json:"account"`
		Cents   int64  `json:"cents"`
	}
	return kafkaconsumer.JSONHandler(func(_ context.Context, c body, _ events.KafkaRecord) (idem.Effect, error) {
		if c.Account == "" || c.Cents <= 0 {
			return idem.Effect{}, errors.New(`want a non-empty "account" and positive "cents"`)
		}
		return idem.Effect{Writes: []types.TransactWriteItem{credit(e.Accounts, c.Account, int(c.Cents))}}, nil
	})
}

// TestBadRecordsFailTheirPartition sends, in each mode, a bad record
// followed by a good one in its partition, and a good one in another
// partition: the bad record and the one after it are reported, the bad
// one's reason is logged, and neither leaves a claim or a credit; the
// other partition commits. The inputs that are not bad (a key is an
// opaque id) are applied once.
func TestBadRecordsFailTheirPartition(t *testing.T) {
	const ok = `{"account":"acc-bad","cents":5}`
	const k = kafkaconsumer.KeyHeader
	for _, tc := range []struct {
		name     string
		bad      func(r *events.KafkaRecord)
		reason   string // logged; "" when the record is not bad
		accepted bool
	}{
		{"the key header empty", func(r *events.KafkaRecord) { r.Headers = headers(k, "") }, "header idempotency-key is empty", false},
		{"the key header only spaces", func(r *events.KafkaRecord) { r.Headers = headers(k, "   ") }, "header idempotency-key is empty", false},
		{"the key header only white space", func(r *events.KafkaRecord) { r.Headers = headers(k, "\t\r\n ") }, "header idempotency-key is empty", false},
		{"the key header null", func(r *events.KafkaRecord) { r.Headers = []map[string]events.JSONNumberBytes{{k: nil}} }, "header idempotency-key is empty", false},
		{"the key header binary", func(r *events.KafkaRecord) { r.Headers = headers(k, "k\xff") }, "header idempotency-key is not UTF-8 text", false},
		{"the key header twice, two values", func(r *events.KafkaRecord) { r.Headers = headers(k, "a", k, "b") }, "more than once, with different values", false},
		{"the key header over 2,048 bytes", func(r *events.KafkaRecord) { r.Headers = headers(k, strings.Repeat("k", 2049)) }, "claim key is 2070 bytes", false}, // "credits@<tag>#" and 2,049,
		{"no header, a negative offset", func(r *events.KafkaRecord) { r.Headers, r.Offset = nil, -5 }, "Kafka numbers both from 0", false},
		{"no topic and no Source", func(r *events.KafkaRecord) { r.Topic = "" }, "names no topic", false},
		{"a value not base64", func(r *events.KafkaRecord) { r.Value = "{not base64}" }, "the value is not base64", false},
		{"a value not JSON", func(r *events.KafkaRecord) { *r = withValue(*r, `{"account":`) }, "not one JSON value", false},
		{"a value not UTF-8", func(r *events.KafkaRecord) { *r = withValue(*r, "{\"account\":\"\xff\",\"cents\":5}") }, "not valid UTF-8", false},
		{"a value of the wrong type", func(r *events.KafkaRecord) { *r = withValue(*r, `{"account":"acc-bad","cents":"5"}`) }, "does not decode into the handler's type", false},
		{"a tombstone (no value)", func(r *events.KafkaRecord) { r.Value = "" }, "not one JSON value", false},
		{"NUL and CR LF in the key", func(r *events.KafkaRecord) { r.Headers = headers(k, "k\x00\r\nX-Injected: 1") }, "", true},
	} {
		for _, mode := range modes {
			t.Run(tc.name+"/"+mode.name, func(t *testing.T) {
				e := newEnv(t)
				bad := idemtest.KafkaRecord("credits", 0, 15, ok, map[string]string{k: "evt-bad"})
				tc.bad(&bad)
				// The bad record and the one after it under credits-0,
				// whatever the bad record's fields say.
				ev := idemtest.KafkaEvent(idemtest.KafkaRecord("credits", 1, 7, `{"account":"acc-good","cents":7}`, nil))
				ev.Records["credits-0"] = []events.KafkaRecord{bad, idemtest.KafkaRecord("credits", 0, 16, `{"account":"acc-next","cents":3}`, nil)}
				h := newHandler(t, e.store, strictCredit(e), mode.opt)
				var got []string
				for range 2 { // the whole batch again, as after a timeout
					resp, err := h(context.Background(), ev)
					if err != nil {
						t.Fatalf("want no function error, got %v", err)
					}
					got = failed(t, resp)
				}
				want, claims, credited := []string{"credits-0@" + itoa(bad.Offset), "credits-0@16"}, 1, 0
				if tc.accepted {
					want, claims, credited = []string{}, 3, 5
				}
				if !slices.Equal(got, want) {
					t.Errorf("batchItemFailures: want %q, got %q", want, got)
				}
				e.checkBalances(t, map[string]int{"acc-bad": credited, "acc-good": 7, "acc-next": map[bool]int{true: 3}[tc.accepted]})
				if n := e.Claims(t); n != claims {
					t.Errorf("claims: want %d, got %d", claims, n)
				}
				logs := e.logs.String()
				if tc.reason != "" && !strings.Contains(logs, tc.reason) {
					t.Errorf("the log does not say %q:\n%.3000s", tc.reason, logs)
				}
				for _, l := range strings.Split(strings.TrimSpace(logs), "\n") {
					if !json.Valid([]byte(l)) {
						t.Errorf("a log line is not one JSON record: %.200q", l)
					}
				}
			})
		}
	}
}

func withValue(r events.KafkaRecord, v string) events.KafkaRecord {
	return idemtest.KafkaRecord(r.Topic, r.Partition, r.Offset, v, map[string]string{kafkaconsumer.KeyHeader: "evt-bad"})
}

func itoa(n int64) string { b, _ := json.Marshal(n); return string(b) }

// TestHeaderOfNoByteValue: a header value that is not a list of bytes
// (JSON numbers from -128 to 127, as Lambda writes them) cannot be an
// events.KafkaEvent: the runtime refuses the event with aws-lambda-go's
// decoding error before the handler runs, and nothing is committed.
// Lambda never sends one; a direct invoke can.
func TestHeaderOfNoByteValue(t *testing.T) {
	raw, err := os.ReadFile("testdata/kafka-event.json")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ name, value, error string }{
		{"a string", `"evt-101"`, "cannot unmarshal string"},
		{"a byte over 127", `[101, 200]`, "cannot unmarshal number 200"},
		{"a fraction", `[101, 1.5]`, "cannot unmarshal number 1.5"},
		{"an object", `{"v": 1}`, "cannot unmarshal object"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			h := newHandler(t, e.store, strictCredit(e))
			ev := strings.Replace(string(raw), `"idempotency-key": [
              101,
              118,
              116,
              45,
              49,
              48,
              49
            ]`, `"idempotency-key": `+tc.value, 1)
			if ev == string(raw) {
				t.Fatal("the test's premise: the sample's first key header was not found")
			}
			out, err := invoke(h)(context.Background(), []byte(ev))
			t.Logf("%s: %v", tc.name, err)
			if err == nil || !strings.Contains(err.Error(), tc.error) || out != nil {
				t.Errorf("want the event refused saying %q, got %s, %v", tc.error, out, err)
			}
			if n := e.Claims(t); n != 0 {
				t.Errorf("claims: want none, got %d", n)
			}
			e.checkBalances(t, map[string]int{"acc-1": 0, "acc-2": 0, "acc-3": 0})
		})
	}
}
