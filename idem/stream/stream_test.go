package stream_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemkit/kit/idem"
	"github.com/idemkit/kit/idem/idemtest"
	"github.com/idemkit/kit/idem/stream"
)

func TestMain(m *testing.M) { idemtest.Main(m) }

// sample reads one of aws-lambda-go's own sample events.
func sample(t *testing.T, name string, v any) {
	t.Helper()
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/aws/aws-lambda-go").Output()
	if err != nil {
		t.Skipf("aws-lambda-go's module directory: %v", err)
	}
	b, err := os.ReadFile(filepath.Join(strings.TrimSpace(string(out)), "events", "testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatal(err)
	}
}

// TestFirstFailureIsReported: records run in order; the first that fails
// (an error or a panic) is the only one reported, and none after it runs.
func TestFirstFailureIsReported(t *testing.T) {
	var ev events.DynamoDBEvent
	sample(t, "dynamodb-event.json", &ev)
	if len(ev.Records) < 2 {
		t.Fatalf("want a sample of several records, got %d", len(ev.Records))
	}
	for _, tc := range []struct {
		name string
		fail func(i int) error // nil: no failure
		want []string          // sequence numbers reported
		ran  int
	}{
		{"all succeed", func(int) error { return nil }, nil, len(ev.Records)},
		{"the second fails", func(i int) error {
			if i == 1 {
				return errors.New("publish: throttled")
			}
			return nil
		}, []string{ev.Records[1].Change.SequenceNumber}, 2},
		{"the first panics", func(i int) error { panic("boom") }, []string{ev.Records[0].Change.SequenceNumber}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var ran []string
			var logs bytes.Buffer
			h, err := stream.DynamoDB(func(_ context.Context, rec events.DynamoDBEventRecord) error {
				ran = append(ran, rec.Change.SequenceNumber)
				return tc.fail(len(ran) - 1)
			}, func(o *stream.Options) { o.Logger = slog.New(slog.NewJSONHandler(&logs, nil)) })
			if err != nil {
				t.Fatal(err)
			}
			resp, err := h(context.Background(), ev)
			var got []string
			for _, f := range resp.BatchItemFailures {
				got = append(got, f.ItemIdentifier)
			}
			if err != nil || strings.Join(got, ",") != strings.Join(tc.want, ",") || len(ran) != tc.ran {
				t.Errorf("want %v reported after %d run, got %v after %d, %v", tc.want, tc.ran, got, len(ran), err)
			}
			if b, _ := json.Marshal(resp); !strings.Contains(string(b), `"batchItemFailures":[`) {
				t.Errorf("want batchItemFailures always a list, got %s", b)
			}
			if (tc.want != nil) != strings.Contains(logs.String(), `"level":"WARN"`) {
				t.Errorf("want one WARN line per failed batch, got %s", logs.String())
			}
		})
	}
}

func TestKinesis(t *testing.T) {
	var ev events.KinesisEvent
	sample(t, "kinesis-event.json", &ev)
	h, err := stream.Kinesis(func(_ context.Context, rec events.KinesisEventRecord) error {
		return errors.New("down")
	})
	if err != nil {
		t.Fatal(err)
	}
	resp, _ := h(context.Background(), ev)
	if len(resp.BatchItemFailures) != 1 || resp.BatchItemFailures[0].ItemIdentifier != ev.Records[0].Kinesis.SequenceNumber {
		t.Errorf("want the first record's sequence number, got %+v", resp)
	}
}

// TestDeadlineStopsTheBatch: within the margin, the first record still
// runs (a timeout under the margin must not stall the shard) and the next
// is reported, so Lambda retries from it.
func TestDeadlineStopsTheBatch(t *testing.T) {
	var ev events.DynamoDBEvent
	sample(t, "dynamodb-event.json", &ev)
	ran := 0
	h, _ := stream.DynamoDB(func(context.Context, events.DynamoDBEventRecord) error { ran++; return nil })
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	resp, _ := h(ctx, ev)
	if ran != 1 || len(resp.BatchItemFailures) != 1 || resp.BatchItemFailures[0].ItemIdentifier != ev.Records[1].Change.SequenceNumber {
		t.Errorf("want the first record run and the second reported, got %d run, %+v", ran, resp)
	}
}

// TestClaimedSourcesKeepConsumersApart: two consumers of one stream on
// one processed-ids table, with distinct Sources, each apply every record.
func TestClaimedSourcesKeepConsumersApart(t *testing.T) {
	env := idemtest.NewEnv(t)
	store, _ := idem.New(env.Client, env.Processed)
	var ev events.DynamoDBEvent
	sample(t, "dynamodb-event.json", &ev)
	for _, consumer := range []string{"audit", "search"} {
		apply, err := stream.Claimed(store, func(_ context.Context, rec events.DynamoDBEventRecord) (idem.Effect, error) {
			w, err := idem.Update(env.Accounts, map[string]string{"account": consumer}, expression.Add(expression.Name("balance"), expression.Value(1)))
			return idem.Effect{Writes: []types.TransactWriteItem{w}}, err
		}, func(o *stream.ClaimedOptions) { o.Source = consumer })
		if err != nil {
			t.Fatal(err)
		}
		h, _ := stream.DynamoDB(apply)
		h(context.Background(), ev)
		if got := env.Balance(t, consumer); got != int64(len(ev.Records)) {
			t.Errorf("%s: want every record applied (%d), got %d", consumer, len(ev.Records), got)
		}
	}
	if _, err := stream.Claimed(store, func(context.Context, events.DynamoDBEventRecord) (idem.Effect, error) { return idem.Effect{}, nil },
		func(o *stream.ClaimedOptions) { o.Source = "a#b" }); err == nil {
		t.Error("want a Source with # refused")
	}
}

// TestClaimedAppliesOnce: a batch delivered again whole (after a
// whole-invoke failure) commits each record's effect once: the records
// that succeeded are Duplicates the second time.
func TestClaimedAppliesOnce(t *testing.T) {
	env := idemtest.NewEnv(t)
	store, err := idem.New(env.Client, env.Processed)
	if err != nil {
		t.Fatal(err)
	}
	var ev events.DynamoDBEvent
	sample(t, "dynamodb-event.json", &ev)
	fail := true
	apply, err := stream.Claimed(store, func(_ context.Context, rec events.DynamoDBEventRecord) (idem.Effect, error) {
		if rec.EventID == ev.Records[1].EventID && fail {
			return idem.Effect{}, errors.New("not yet")
		}
		w, err := idem.Update(env.Accounts, map[string]string{"account": "acc-1"}, expression.Add(expression.Name("balance"), expression.Value(1)))
		return idem.Effect{Writes: []types.TransactWriteItem{w}}, err
	})
	if err != nil {
		t.Fatal(err)
	}
	h, _ := stream.DynamoDB(apply)
	if resp, _ := h(context.Background(), ev); len(resp.BatchItemFailures) != 1 {
		t.Fatalf("want the second record reported, got %+v", resp)
	}
	fail = false
	if resp, _ := h(context.Background(), ev); len(resp.BatchItemFailures) != 0 {
		t.Fatalf("the retry: want no failure, got %+v", resp)
	}
	if got := env.Balance(t, "acc-1"); got != int64(len(ev.Records)) {
		t.Errorf("want each record applied once (%d), got %d", len(ev.Records), got)
	}
}

func TestTableName(t *testing.T) {
	for arn, want := range map[string]string{
		"arn:aws:dynamodb:us-east-1:123456789012:table/ExampleTableWithStream/stream/2015-06-27T00:48:05.899": "ExampleTableWithStream",
		"arn:aws:kinesis:us-east-1:123456789012:stream/s":                                                     "stream",
		"":                                    "stream",
		"arn:aws:dynamodb:us-east-1:1:table/": "stream",
	} {
		if got := stream.TableName(arn); got != want {
			t.Errorf("TableName(%q): want %q, got %q", arn, want, got)
		}
	}
}
