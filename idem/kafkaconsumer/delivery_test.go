package kafkaconsumer_test

import (
	"context"
	"encoding/json"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda"

	"github.com/idemkit/kit/idem"
	"github.com/idemkit/kit/idem/idemtest"
	"github.com/idemkit/kit/idem/kafkaconsumer"
)

// TestEventFile: testdata/kafka-event.json, modelled on Lambda's MSK
// sample (base64 values and keys, header values as signed bytes), loses
// nothing through aws-lambda-go's events.KafkaEvent.
func TestEventFile(t *testing.T) {
	raw, err := os.ReadFile("testdata/kafka-event.json")
	if err != nil {
		t.Fatal(err)
	}
	idemtest.CheckJSONRoundTrip(t, raw, &events.KafkaEvent{})
}

// TestResponseShape: Response is the documented shape, the example
// decoding into it and encoding back as it was.
func TestResponseShape(t *testing.T) {
	const documented = `{"batchItemFailures":[{"itemIdentifier":{"partition":"my-topic-0","offset":100}}]}`
	var resp kafkaconsumer.Response
	dec := json.NewDecoder(strings.NewReader(documented))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&resp); err != nil {
		t.Fatal(err)
	}
	want := kafkaconsumer.Response{BatchItemFailures: []kafkaconsumer.BatchItemFailure{{ItemIdentifier: kafkaconsumer.ItemIdentifier{Partition: "my-topic-0", Offset: 100}}}}
	if !slices.Equal(resp.BatchItemFailures, want.BatchItemFailures) {
		t.Errorf("decoded: want %+v, got %+v", want, resp)
	}
	if out, err := json.Marshal(resp); err != nil || string(out) != documented {
		t.Errorf("encoded: want %s, got %s (%v)", documented, out, err)
	}
	if out, _ := json.Marshal(kafkaconsumer.Response{BatchItemFailures: []kafkaconsumer.BatchItemFailure{}}); string(out) != `{"batchItemFailures":[]}` {
		t.Errorf("no failures: got %s", out)
	}
}

// invoke is the handler as the Lambda runtime calls it: the event's JSON
// decoded into events.KafkaEvent by aws-lambda-go, the response encoded.
func invoke(h func(context.Context, events.KafkaEvent) (kafkaconsumer.Response, error)) func(context.Context, []byte) ([]byte, error) {
	return lambda.NewHandler(h).Invoke
}

// TestRedeliveredBatch: the sample event, as the runtime decodes it,
// delivered three times (idemtest.Replay: the same records each time, as
// after a timeout): each credit once, the record the producer published
// again under its idempotency-key a Duplicate, every later delivery all
// Duplicates, and no delivery counted (Kafka keeps no count).
func TestRedeliveredBatch(t *testing.T) {
	raw, err := os.ReadFile("testdata/kafka-event.json")
	if err != nil {
		t.Fatal(err)
	}
	for _, mode := range modes {
		t.Run(mode.name, func(t *testing.T) {
			e := newEnv(t)
			var attempts []int
			h := newHandler(t, e.store, func(ctx context.Context, rec events.KafkaRecord) (idem.Effect, error) {
				msg, _ := idem.FromContext(ctx)
				attempts = append(attempts, msg.Attempt) // one record at a time: Concurrency 1
				return e.handler(rec)
			}, mode.opt, func(o *kafkaconsumer.Options) { o.Concurrency = 1 })
			for i, d := range idemtest.Replay(context.Background(), 3, invoke(h), raw) {
				if d.Err != nil || string(d.Response) != `{"batchItemFailures":[]}` {
					t.Errorf("delivery %d: want no failures, got %s, %v", i, d.Response, d.Err)
				}
			}
			// The first delivery: 3 Processed and the re-published record a
			// Duplicate; each later one: 4 Duplicates.
			checkOutcomes(t, e.seen.take(), map[idem.Outcome]int{idem.Processed: 3, idem.Duplicate: 1 + 4 + 4})
			e.checkBalances(t, map[string]int{"acc-1": 500, "acc-2": 250, "acc-3": 100})
			if n := e.Claims(t); n != 3 {
				t.Errorf("claims: want 3, got %d", n)
			}
			if slices.ContainsFunc(attempts, func(a int) bool { return a != 0 }) {
				t.Errorf("want every Attempt 0, got %v", attempts)
			}
		})
	}
}

// TestFailureStopsItsPartition: a failure in partition 0 and a panic in
// partition 2 stop those partitions, their later records reported failed
// without running; partition 1 goes on. Lambda then retries from the
// failed offsets, and later hands the whole batch again, as after a
// timeout: each credit once.
func TestFailureStopsItsPartition(t *testing.T) {
	batch := idemtest.KafkaEvent(
		rec(0, 10, `{"account":"acc-a","cents":1}`, "a-10"),
		rec(0, 11, `fail-once {"account":"acc-a","cents":10}`, "a-11"),
		rec(0, 12, `{"account":"acc-a","cents":100}`, "a-12"),
		rec(1, 20, `{"account":"acc-b","cents":1}`, "b-20"),
		rec(1, 21, `{"account":"acc-b","cents":10}`, ""),
		rec(1, 22, `{"account":"acc-b","cents":100}`, "b-22"),
		rec(2, 30, `panic-once {"account":"acc-c","cents":1}`, "c-30"),
		rec(2, 31, `{"account":"acc-c","cents":10}`, "c-31"),
	)
	// What Lambda hands over next: each failed partition from its first
	// failed offset.
	retry := idemtest.KafkaEvent(batch.Records["credits-0"][1], batch.Records["credits-0"][2], batch.Records["credits-2"][0], batch.Records["credits-2"][1])
	const wantJSON = `{"batchItemFailures":[` +
		`{"itemIdentifier":{"partition":"credits-0","offset":11}},{"itemIdentifier":{"partition":"credits-0","offset":12}},` +
		`{"itemIdentifier":{"partition":"credits-2","offset":30}},{"itemIdentifier":{"partition":"credits-2","offset":31}}]}`
	for _, mode := range modes {
		t.Run(mode.name, func(t *testing.T) {
			e := newEnv(t)
			h := newHandler(t, e.store, func(_ context.Context, rec events.KafkaRecord) (idem.Effect, error) { return e.handler(rec) }, mode.opt)
			resp, err := h(context.Background(), batch)
			out, _ := json.Marshal(resp)
			t.Logf("response: %s", out)
			if err != nil || string(out) != wantJSON {
				t.Errorf("want %s, got %s, %v", wantJSON, out, err)
			}
			for _, id := range []string{"credits-0@12", "credits-2@31"} {
				if e.runs.ran(id) {
					t.Errorf("%s ran after an earlier record of its partition failed", id)
				}
			}
			for tp, want := range map[string][]string{
				"credits-0": {"credits-0@10", "credits-0@11"},
				"credits-1": {"credits-1@20", "credits-1@21", "credits-1@22"},
				"credits-2": {"credits-2@30"},
			} {
				if got := e.runs.partition(tp); !slices.Equal(got, want) {
					t.Errorf("%s ran %q, want %q", tp, got, want)
				}
			}
			e.checkBalances(t, map[string]int{"acc-a": 1, "acc-b": 111, "acc-c": 0})
			checkOutcomes(t, e.seen.take(), map[idem.Outcome]int{idem.Processed: 4, idem.Failed: 4})
			for _, want := range []string{"an earlier record of its partition failed (after offset 11)", "refused", "kaboom", `"partition":"credits-2","offset":31`} {
				if !strings.Contains(e.logs.String(), want) {
					t.Errorf("the log does not say %q:\n%s", want, e.logs.String())
				}
			}

			checkFailed(t, failed(t, must(h(context.Background(), retry))))
			checkOutcomes(t, e.seen.take(), map[idem.Outcome]int{idem.Processed: 4})
			checkFailed(t, failed(t, must(h(context.Background(), batch))))
			checkOutcomes(t, e.seen.take(), map[idem.Outcome]int{idem.Duplicate: 8})
			e.checkBalances(t, map[string]int{"acc-a": 111, "acc-b": 111, "acc-c": 11})
		})
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}
