package handler_test

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/idemkit/kit/functions/internal/credit"
	"github.com/idemkit/kit/functions/queue/internal/handler"
	"github.com/idemkit/kit/idem"
	"github.com/idemkit/kit/idem/idemtest"
)

func TestMain(m *testing.M) { idemtest.Main(m) }

// TestBadBodiesFailWithTheirReason runs the queue function's handler on the
// real local endpoint: each bad body is the one record in batchItemFailures,
// its reason is logged, and nothing is claimed or credited.
func TestBadBodiesFailWithTheirReason(t *testing.T) {
	e := idemtest.NewEnv(t)
	var logs bytes.Buffer
	store, err := idem.New(e.Client, e.Processed, func(o *idem.Options) {
		o.Observers = []idem.Observer{idemtest.EMF(t, &bytes.Buffer{})}
		o.Logger = slog.New(slog.NewJSONHandler(&logs, nil))
	})
	if err != nil {
		t.Fatal(err)
	}
	h, err := handler.New(store, credit.Applier{AccountsTable: e.Accounts})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, body, reason string
	}{
		{"empty body", ``, "body is empty"},
		{"invalid JSON", `{"id":"evt_1","account":`, "not valid JSON"},
		{"invalid UTF-8", "{\"id\":\"evt_1\",\"account\":\"acc-\xff\",\"cents\":5}", "not valid UTF-8"},
		{"trailing data", `{"account":"acc-9","cents":5} {}`, "data after the JSON object"},
		{"not an object", `["acc-9",5]`, "not a JSON object"},
		{"id a number", `{"id":7,"account":"acc-9","cents":5}`, `\"id\" must be a string`},
		{"account a number", `{"account":9,"cents":5}`, `\"account\" must be a string`},
		{"cents a string", `{"account":"acc-9","cents":"5"}`, "must be a whole number"},
		{"cents fractional", `{"account":"acc-9","cents":2.5}`, "must be a whole number"},
		{"cents in exponent form", `{"account":"acc-9","cents":5e2}`, "must be a whole number"},
		{"negative cents", `{"account":"acc-9","cents":-5}`, "must be positive"},
		{"zero cents", `{"account":"acc-9","cents":0}`, "must be positive"},
		{"cents overflow int64", `{"account":"acc-9","cents":9223372036854775808}`, "does not fit in 64 bits"},
		{"id over 2,048 bytes", `{"id":"` + strings.Repeat("e", 3000) + `","account":"acc-9","cents":5}`, "claim key is 3008 bytes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			logs.Reset()
			rec := events.SQSMessage{MessageId: "m-1", Body: tc.body, EventSource: "aws:sqs", EventSourceARN: "arn:aws:sqs:us-east-1:123456789012:credits"}
			resp, err := h(context.Background(), events.SQSEvent{Records: []events.SQSMessage{rec}})
			if err != nil || len(resp.BatchItemFailures) != 1 || resp.BatchItemFailures[0].ItemIdentifier != "m-1" {
				t.Fatalf("want m-1 in batchItemFailures and no error, got %v, %v", resp.BatchItemFailures, err)
			}
			if !strings.Contains(logs.String(), tc.reason) || !strings.Contains(logs.String(), `"outcome":"Failed"`) {
				t.Errorf("want the failure logged saying %q, got %s", tc.reason, logs.String())
			}
		})
	}
	t.Run("logged under its key", func(t *testing.T) {
		logs.Reset()
		rec := events.SQSMessage{MessageId: "m-2", Body: `{"id":"evt_bad","account":`, EventSource: "aws:sqs", EventSourceARN: "arn:aws:sqs:us-east-1:123456789012:credits",
			MessageAttributes: map[string]events.SQSMessageAttribute{"IdempotencyKey": {DataType: "String", StringValue: aws.String("evt_bad")}}}
		if resp, err := h(context.Background(), events.SQSEvent{Records: []events.SQSMessage{rec}}); err != nil || len(resp.BatchItemFailures) != 1 {
			t.Fatalf("want m-2 in batchItemFailures and no error, got %v, %v", resp.BatchItemFailures, err)
		}
		for _, want := range []string{`"outcome":"Failed"`, `"id":"evt_bad"`, `"key":"credits#evt_bad"`, `"messageId":"m-2"`, "not valid JSON"} {
			if !strings.Contains(logs.String(), want) {
				t.Errorf("want %s in the Failed line, got %s", want, logs.String())
			}
		}
		t.Logf("%s", logs.String())
	})
	if n := e.Claims(t); n != 0 {
		t.Errorf("want no claim, got %d", n)
	}
	if n := idemtest.ItemCount(t, e.Client, e.Accounts); n != 0 {
		t.Errorf("want no account credited, got %d item(s)", n)
	}
}
