package ledger_test

import (
	"bytes"
	"context"
	"log/slog"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/idemkit/kit/functions/ledger/internal/ledger"
	"github.com/idemkit/kit/idem"
	"github.com/idemkit/kit/idem/idemtest"
)

func TestMain(m *testing.M) { idemtest.Main(m) }

const arn = "arn:aws:sqs:us-east-1:123456789012:LedgerQueue"

// message is a credit.applied message as the relay sends it.
func message(id, key, body string) events.SQSMessage {
	return events.SQSMessage{MessageId: id, Body: body, EventSource: "aws:sqs", EventSourceARN: arn,
		MessageAttributes: map[string]events.SQSMessageAttribute{
			"IdempotencyKey": {DataType: "String", StringValue: aws.String(key)},
			"Type":           {DataType: "String", StringValue: aws.String("credit.applied")},
		}}
}

// fixture is the ledger's handler on fresh tables of the local endpoint.
func fixture(t *testing.T) (*idemtest.Env, string, *bytes.Buffer, func(context.Context, events.SQSEvent) (events.SQSEventResponse, error)) {
	t.Helper()
	e := idemtest.NewEnv(t)
	table := idemtest.CreateTable(t, e.Client, idemtest.Table{Name: "ledger", HashKey: "entry"})
	var logs bytes.Buffer
	store, err := idem.New(e.Client, e.Processed, func(o *idem.Options) { o.Logger = slog.New(slog.NewJSONHandler(&logs, nil)) })
	if err != nil {
		t.Fatal(err)
	}
	h, err := ledger.New(store, table)
	if err != nil {
		t.Fatal(err)
	}
	return e, table, &logs, h
}

func failed(resp events.SQSEventResponse) []string {
	var ids []string
	for _, f := range resp.BatchItemFailures {
		ids = append(ids, f.ItemIdentifier)
	}
	return ids
}

// TestOneEntryPerCredit: a message delivered three times (twice in one
// batch, once more as a re-send with a new messageId) is one ledger entry,
// keyed by its outbox id.
func TestOneEntryPerCredit(t *testing.T) {
	e, table, _, h := fixture(t)
	const key = "0f1e2d3c4b5a69788796a5b4c3d2e1f0"
	body := `{"account":"acc-9","cents":500,"id":"evt_001"}`
	for _, batch := range [][]events.SQSMessage{
		{message("m-1", key, body), message("m-1", key, body)},
		{message("m-2", key, body), message("m-3", "ffeeddccbbaa99887766554433221100", `{"account":"acc-7","cents":350,"id":"evt_002"}`)},
	} {
		resp, err := h(context.Background(), events.SQSEvent{Records: batch})
		if err != nil || len(resp.BatchItemFailures) != 0 {
			t.Fatalf("want no failure, got %v, %v", failed(resp), err)
		}
	}
	if n := idemtest.ItemCount(t, e.Client, table); n != 2 {
		t.Errorf("want 2 ledger entries, one per credit, got %d", n)
	}
	if got := idemtest.Number(t, e.Client, table, "entry", key, "cents"); got != 500 {
		t.Errorf("entry %s: want 500 cents, got %d", key, got)
	}
	if n := e.Claims(t); n != 2 {
		t.Errorf("want 2 claims, got %d", n)
	}
}

// TestBadMessagesFailAlone: each bad record is reported failed with its
// reason logged, and the good record beside it is written.
func TestBadMessagesFailAlone(t *testing.T) {
	e, table, logs, h := fixture(t)
	noKey := message("m-nokey", "", `{"account":"acc-9","cents":5}`)
	delete(noKey.MessageAttributes, "IdempotencyKey")
	otherType := message("m-type", "k-type", `{"account":"acc-9","cents":5}`)
	otherType.MessageAttributes["Type"] = events.SQSMessageAttribute{DataType: "String", StringValue: aws.String("credit.reversed")}
	batch := []events.SQSMessage{
		message("m-good", "k-good", `{"account":"acc-9","cents":5,"id":"evt_1"}`),
		message("m-json", "k-json", `{"account":"acc-9","cents":`),
		message("m-zero", "k-zero", `{"account":"acc-9","cents":0}`),
		message("m-account", "k-account", `{"cents":5}`),
		noKey,
		otherType,
	}
	resp, err := h(context.Background(), events.SQSEvent{Records: batch})
	if err != nil {
		t.Fatal(err)
	}
	got := failed(resp)
	slices.Sort(got)
	if want := []string{"m-account", "m-json", "m-nokey", "m-type", "m-zero"}; !slices.Equal(got, want) {
		t.Errorf("batchItemFailures: want %q, got %q", want, got)
	}
	for _, reason := range []string{"not valid JSON", `\"cents\" must be positive`, `\"account\" must be a string`, "no IdempotencyKey message attribute", `a \"credit.reversed\" message`} {
		if !strings.Contains(logs.String(), reason) {
			t.Errorf("want a failure logged saying %s, got %s", reason, logs.String())
		}
	}
	if n := idemtest.ItemCount(t, e.Client, table); n != 1 {
		t.Errorf("want the one good entry, got %d", n)
	}
}

func TestLoadEnv(t *testing.T) {
	for _, tc := range []struct {
		name string
		env  map[string]string
		want string // in the error; "" for none
	}{
		{"complete", map[string]string{"PROCESSED_TABLE": "p", "LEDGER_TABLE": "l", "RETENTION_DAYS": "30"}, ""},
		{"no ledger table", map[string]string{"PROCESSED_TABLE": "p"}, "LEDGER_TABLE"},
		{"no tables", nil, "PROCESSED_TABLE, LEDGER_TABLE"},
		{"bad retention", map[string]string{"PROCESSED_TABLE": "p", "LEDGER_TABLE": "l", "RETENTION_DAYS": "0"}, "RETENTION_DAYS"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ledger.LoadEnv(func(k string) string { return tc.env[k] })
			if tc.want == "" {
				if err != nil || got != (ledger.Env{ProcessedTable: "p", LedgerTable: "l", RetentionDays: 30}) {
					t.Fatalf("want p, l and 30 days, got %+v, %v", got, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("want an error naming %s, got %v", tc.want, err)
			}
		})
	}
}
