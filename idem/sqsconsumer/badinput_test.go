package sqsconsumer_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemkit/kit/idem"
	"github.com/idemkit/kit/idem/sqsconsumer"
)

// strictCredit refuses any body that is not one JSON object in valid UTF-8
// with a non-empty "account" and positive whole "cents", as a production
// handler should: JSONHandler checks the JSON and the types, the handler
// the rest (the reference queue function's credit.Parse does it all).
func strictCredit(e *env) sqsconsumer.Handler {
	type credit struct {
		Account string `json:"account"`
		Cents   int64  `json:"cents"`
	}
	return sqsconsumer.JSONHandler(func(_ context.Context, c credit, _ events.SQSMessage) (idem.Effect, error) {
		if c.Account == "" || c.Cents <= 0 {
			return idem.Effect{}, errors.New(`want a non-empty "account" and positive "cents"`)
		}
		return idem.Effect{Writes: []types.TransactWriteItem{e.credit(c.Account, int(c.Cents))}}, nil
	})
}

// TestBadRecordsFailAlone sends, in each mode, a batch of one bad record
// and one good one: the bad record alone is in batchItemFailures, its
// reason is logged, and it leaves no claim and no credit. The few inputs
// that are not bad for a queue (a key is an opaque id there, and no header
// carries it) are applied once, and logged on one line.
func TestBadRecordsFailAlone(t *testing.T) {
	const ok = `{"account":"acc-bad","cents":5}` // a good body for a bad key
	attr := func(dataType, v string) map[string]events.SQSMessageAttribute {
		return map[string]events.SQSMessageAttribute{sqsconsumer.KeyAttribute: {DataType: dataType, StringValue: aws.String(v)}}
	}
	credit := func(fields string) string { return `{"account":"acc-bad",` + fields + `}` }
	for _, tc := range []struct {
		name     string
		body     string
		id       string // messageId; "m-bad" when empty
		attrs    map[string]events.SQSMessageAttribute
		reason   string // logged; "" when the record is not bad
		accepted bool
	}{
		{"empty body", "", "", nil, "not one JSON value", false},
		{"invalid JSON", `{"account":`, "", nil, "not one JSON value", false},
		{"invalid UTF-8 in the body", "{\"account\":\"acc-\xff\",\"cents\":5}", "", nil, "not valid UTF-8", false},
		{"two JSON values", ok + ok, "", nil, "not one JSON value", false},
		{"not an object", `["acc-bad",5]`, "", nil, "does not decode into the handler's type: json: cannot unmarshal array", false},
		{"cents a string", credit(`"cents":"5"`), "", nil, "does not decode into the handler's type: json: cannot unmarshal string", false},
		{"cents fractional", credit(`"cents":2.5`), "", nil, "does not decode into the handler's type: json: cannot unmarshal number 2.5", false},
		{"account a number", `{"account":9,"cents":5}`, "", nil, "does not decode into the handler's type: json: cannot unmarshal number", false},
		{"negative cents", credit(`"cents":-5`), "", nil, "positive", false},
		{"zero cents", credit(`"cents":0`), "", nil, "positive", false},
		{"cents overflow int64", credit(`"cents":9223372036854775808`), "", nil, "does not decode into the handler's type: json: cannot unmarshal number 9223372036854775808", false},
		{"key attribute over 2,048 bytes", ok, "", attr("String", strings.Repeat("k", 2049)), "claim key is 2057 bytes", false},
		{"messageId over 2,048 bytes", ok, strings.Repeat("m", 2100), nil, "claim key is 2108 bytes", false},
		{"key attribute not UTF-8", ok, "", attr("String", "k\xff"), "not valid UTF-8", false},
		{"key attribute a Number", ok, "", attr("Number", "7"), `data type \"Number\"`, false},
		{"key attribute Binary", ok, "", map[string]events.SQSMessageAttribute{sqsconsumer.KeyAttribute: {DataType: "Binary", BinaryValue: []byte("k")}}, `data type \"Binary\"`, false},
		{"key attribute empty", ok, "", attr("String", ""), "is empty", false},
		{"key attribute only spaces", ok, "", attr("String", "   "), "message attribute IdempotencyKey is empty", false},
		{"key attribute only white space", ok, "", attr("String", "\t \n"), "message attribute IdempotencyKey is empty", false},
		{"messageId only spaces and no key", ok, "   ", nil, sqsconsumer.ErrNoKey.Error(), false},
		{"no messageId and no key", ok, "-", nil, sqsconsumer.ErrNoKey.Error(), false},
		{"no eventSourceARN: no queue to scope the key", ok, "no-arn", nil, "names no queue", false},
		// SQS allows CR, LF and tab in attribute values, and a direct
		// invoke can carry NUL: an opaque key, escaped in the log.
		{"CR LF in the key", ok, "", attr("String", "k\r\nX-Injected: 1"), "", true},
		{"NUL in the key", ok, "", attr("String", "k\x00"), "", true},
		// Beyond SQS's 1 MiB, as only a direct invoke sends: the claim
		// keeps its SHA-256, not the body.
		{"body over 1 MiB", credit(`"cents":5,"pad":"` + strings.Repeat("x", 1<<20) + `"`), "", nil, "", true},
	} {
		for _, mode := range []string{"one transaction per record", "BatchTransactions"} {
			t.Run(tc.name+"/"+mode, func(t *testing.T) {
				e := newEnv(t)
				bad := record("m-bad", tc.body)
				switch tc.id {
				case "":
				case "-":
					bad.MessageId = ""
				case "no-arn":
					bad.EventSourceARN = ""
				default:
					bad.MessageId = tc.id
				}
				bad.MessageAttributes = tc.attrs
				batch := []events.SQSMessage{bad, record("m-good", `{"account":"acc-good","cents":7}`)}
				h := newHandler(t, e.store, strictCredit(e), func(o *sqsconsumer.Options) { o.BatchTransactions = mode == "BatchTransactions" })
				var failed []string
				for range 2 { // the whole batch again, as after a timeout
					resp, err := h(context.Background(), events.SQSEvent{Records: batch})
					if err != nil {
						t.Fatalf("want no function error, got %v", err)
					}
					failed = failed[:0]
					for _, f := range resp.BatchItemFailures {
						failed = append(failed, f.ItemIdentifier)
					}
				}
				wantFailed, claims, credited := []string{bad.MessageId}, 1, 0
				if tc.accepted {
					wantFailed, claims, credited = nil, 2, 5
				}
				if !slices.Equal(failed, wantFailed) {
					t.Errorf("batchItemFailures: want %q, got %q", wantFailed, failed)
				}
				e.checkBalances(t, map[string]int{"acc-bad": credited, "acc-good": 7})
				if n := e.Claims(t); n != claims {
					t.Errorf("claims: want %d, got %d", claims, n)
				}
				logs := e.logs.String()
				if tc.reason != "" && !strings.Contains(logs, tc.reason) {
					t.Errorf("the log does not say %q:\n%.2000s", tc.reason, logs)
				}
				// Every log line one JSON record, whatever the key holds.
				for _, l := range strings.Split(strings.TrimSpace(logs), "\n") {
					if !json.Valid([]byte(l)) {
						t.Errorf("a log line is not one JSON record: %.200q", l)
					}
				}
				if e.outcomes(t)[idem.Failed] > 0 && tc.accepted {
					t.Errorf("an accepted record was counted Failed:\n%.2000s", logs)
				}
			})
		}
	}
}
