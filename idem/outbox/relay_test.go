package outbox_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/idemkit/kit/idem/internal/wire"
	"github.com/idemkit/kit/idem/outbox"
)

// These tests script SQS's and EventBridge's answers, partial failures
// among them, which no local server gives on demand; chain_test.go runs
// the relay against the local servers.

const queue = "https://sqs.us-east-1.amazonaws.com/123456789012/ledger"

// record is a stream record of an outbox item with id n bound for dest.
func record(n int, dest, body string) events.DynamoDBEventRecord {
	s := events.NewStringAttribute
	img := map[string]events.DynamoDBAttributeValue{
		"pk": s("#outbox#" + strconv.Itoa(n)), wire.KindAttr: s(wire.Kind), wire.IDAttr: s(fmt.Sprintf("id-%02d", n)),
		wire.DestinationAttr: s(dest), wire.BodyAttr: s(body), wire.TypeAttr: s("credit.applied"),
		wire.GroupAttr: s("src#msg-" + strconv.Itoa(n/3)), wire.CreatedAtAttr: s("2026-12-02T01:02:03Z"),
		wire.AttributesAttr: events.NewMapAttribute(map[string]events.DynamoDBAttributeValue{"account": s("acc-1")}),
	}
	return events.DynamoDBEventRecord{EventID: fmt.Sprint("ev-", n), EventName: "INSERT",
		Change: events.DynamoDBStreamRecord{SequenceNumber: fmt.Sprint(1000 + n), NewImage: img}}
}

// claimRecord is a stream record of a claim, which the relay passes over.
func claimRecord(n int) events.DynamoDBEventRecord {
	return events.DynamoDBEventRecord{EventID: fmt.Sprint("claim-", n), EventName: "INSERT", Change: events.DynamoDBStreamRecord{
		SequenceNumber: fmt.Sprint(5000 + n), NewImage: map[string]events.DynamoDBAttributeValue{"pk": events.NewStringAttribute("src#" + strconv.Itoa(n))}}}
}

func failures(resp events.DynamoDBEventResponse) []string {
	var ids []string
	for _, f := range resp.BatchItemFailures {
		ids = append(ids, f.ItemIdentifier)
	}
	return ids
}

func TestRelay(t *testing.T) {
	fifo := queue + ".fifo"
	cases := []struct {
		name      string
		records   func() []events.DynamoDBEventRecord
		fail      []string // ids of entries refused (SQS or EventBridge)
		failCall  []string // ids whose call fails whole
		noEvents  bool
		wantCalls []int  // entries per call, SQS and EventBridge, in stream order
		wantFail  string // the sequence number answered, or ""
	}{
		{name: "25 to one queue, claims and a removal between", records: func() []events.DynamoDBEventRecord {
			var recs []events.DynamoDBEventRecord
			for n := range 25 {
				recs = append(recs, record(n, queue, fmt.Sprint(`{"n":`, n, `}`)))
				if n%7 == 0 {
					recs = append(recs, claimRecord(n))
				}
			}
			gone := record(99, queue, "x")
			gone.EventName, gone.Change.OldImage, gone.Change.NewImage = "REMOVE", gone.Change.NewImage, nil
			return append(recs, gone)
		}, wantCalls: []int{10, 10, 5}},
		{name: "destinations alternate", records: func() []events.DynamoDBEventRecord {
			return []events.DynamoDBEventRecord{record(0, queue, "a"), record(1, queue, "b"), record(2, fifo, "c"), record(3, "eventbridge:bus", `{"a":1}`), record(4, queue, "d")}
		}, wantCalls: []int{2, 1, 1, 1}},
		{name: "an entry fails: it and all after it come back", records: func() []events.DynamoDBEventRecord {
			var recs []events.DynamoDBEventRecord
			for n := range 15 {
				recs = append(recs, record(n, queue, "b"))
			}
			return recs
		}, fail: []string{"id-13", "id-11"}, wantCalls: []int{10, 5}, wantFail: "1011"},
		{name: "the call fails", records: func() []events.DynamoDBEventRecord {
			return []events.DynamoDBEventRecord{record(0, queue, "a"), record(1, fifo, "b")}
		}, failCall: []string{"id-01"}, wantCalls: []int{1, 1}, wantFail: "1001"},
		// The queue's call goes out with the events' (Options.Concurrency):
		// a record after the answer may have been sent too.
		{name: "an event fails", records: func() []events.DynamoDBEventRecord {
			return []events.DynamoDBEventRecord{record(0, "eventbridge:bus", `{}`), record(1, "eventbridge:bus", `{"a":1}`), record(2, queue, "c")}
		}, fail: []string{"id-01"}, wantCalls: []int{2, 1}, wantFail: "1001"},
		{name: "no EventBridge client", records: func() []events.DynamoDBEventRecord {
			return []events.DynamoDBEventRecord{record(0, queue, "a"), record(1, "eventbridge:bus", `{}`)}
		}, noEvents: true, wantCalls: []int{1}, wantFail: "1001"},
		{name: "a stream without new images", records: func() []events.DynamoDBEventRecord {
			keys := record(1, queue, "b")
			keys.Change.NewImage, keys.Change.StreamViewType = nil, "KEYS_ONLY"
			return []events.DynamoDBEventRecord{record(0, queue, "a"), keys, record(2, queue, "c")}
		}, wantCalls: []int{1}, wantFail: "1001"},
		{name: "an item that cannot be read", records: func() []events.DynamoDBEventRecord {
			bad := record(1, queue, "b")
			delete(bad.Change.NewImage, wire.DestinationAttr)
			return []events.DynamoDBEventRecord{record(0, queue, "a"), bad, record(2, queue, "c")}
		}, wantCalls: []int{1}, wantFail: "1001"},
		// Items the kit did not write (by hand, by another tool, an older
		// version): each one unreadable record, at its place, and never a
		// panic (a blank detail was sliced past its end).
		{name: "a blank EventBridge detail", records: func() []events.DynamoDBEventRecord {
			return []events.DynamoDBEventRecord{record(0, "eventbridge:bus", `{}`), record(1, "eventbridge:bus", "   "), record(2, "eventbridge:bus", `{}`)}
		}, wantCalls: []int{1}, wantFail: "1001"},
		{name: "an EventBridge detail that is not an object", records: func() []events.DynamoDBEventRecord {
			return []events.DynamoDBEventRecord{record(0, "eventbridge:bus", `[1]`), record(1, "eventbridge:bus", `{}`)}
		}, wantFail: "1000"},
		{name: "an EventBridge detail whose field shadows the key", records: func() []events.DynamoDBEventRecord {
			return []events.DynamoDBEventRecord{record(0, queue, "a"), record(1, "eventbridge:bus", `{"IdempotencyKey":"order-7"}`)}
		}, wantCalls: []int{1}, wantFail: "1001"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			sc := newScript()
			for _, id := range c.fail {
				sc.failEntry[id] = true
			}
			for _, id := range c.failCall {
				sc.failCall[id] = true
			}
			fs, fe := &fakeSQS{script: sc}, &fakeEvents{script: sc}
			r, err := outbox.New(func(o *outbox.Options) {
				o.SQS = fs
				if !c.noEvents {
					o.EventBridge = fe
				}
			})
			if err != nil {
				t.Fatal(err)
			}
			recs := c.records()
			resp, err := r.Handle(context.Background(), events.DynamoDBEvent{Records: recs})
			if err != nil {
				t.Fatal(err)
			}
			got := failures(resp)
			if want := []string{c.wantFail}; (c.wantFail == "" && len(got) != 0) || (c.wantFail != "" && (len(got) != 1 || got[0] != want[0])) {
				t.Errorf("failures: want %q, got %q", c.wantFail, got)
			}
			for _, in := range fs.inputs {
				for _, e := range in.Entries {
					key := e.MessageAttributes["IdempotencyKey"].StringValue
					if key == nil || e.MessageAttributes["Type"].StringValue == nil || aws.ToString(e.MessageAttributes["account"].StringValue) != "acc-1" {
						t.Errorf("entry %s: attributes %v", aws.ToString(e.Id), e.MessageAttributes)
					}
					fifo := strings.HasSuffix(aws.ToString(in.QueueUrl), ".fifo")
					if fifo != (e.MessageDeduplicationId != nil && aws.ToString(e.MessageDeduplicationId) == aws.ToString(key) && aws.ToString(e.MessageGroupId) != "") {
						t.Errorf("entry %s to %s: deduplication id %v, group %v", aws.ToString(e.Id), aws.ToString(in.QueueUrl), e.MessageDeduplicationId, e.MessageGroupId)
					}
				}
			}
			for _, in := range fe.inputs {
				for _, e := range in.Entries {
					var d map[string]any
					if err := json.Unmarshal([]byte(aws.ToString(e.Detail)), &d); err != nil || d["idempotencyKey"] == nil {
						t.Errorf("event detail %s: %v", aws.ToString(e.Detail), err)
					}
					if aws.ToString(e.EventBusName) != "bus" || aws.ToString(e.DetailType) != "credit.applied" || aws.ToString(e.Source) != "idemkit.outbox" || e.Time == nil {
						t.Errorf("event %+v", e)
					}
				}
			}
			var calls []int
			for _, cl := range sc.byStream() {
				calls = append(calls, len(cl.ids))
			}
			if fmt.Sprint(calls) != fmt.Sprint(c.wantCalls) {
				t.Errorf("entries per call: want %v, got %v", c.wantCalls, calls)
			}
		})
	}
}

// TestUnreadableItemsAreErrors: an outbox item no retry can send is
// logged at ERROR, as it will end at the on-failure destination.
func TestUnreadableItemsAreErrors(t *testing.T) {
	for _, body := range []string{"   ", "", "{", `{"IDEMPOTENCYKEY":1}`} {
		var logs strings.Builder
		r, err := outbox.New(func(o *outbox.Options) {
			o.EventBridge = &fakeEvents{script: newScript()}
			o.Logger = slog.New(slog.NewTextHandler(&logs, nil))
		})
		if err != nil {
			t.Fatal(err)
		}
		resp, err := r.Handle(context.Background(), events.DynamoDBEvent{Records: []events.DynamoDBEventRecord{record(0, "eventbridge:bus", body)}})
		if err != nil || len(resp.BatchItemFailures) != 1 || !strings.Contains(logs.String(), "level=ERROR") {
			t.Errorf("body %q: want the record failed and logged at ERROR, got %v, %v and %q", body, resp.BatchItemFailures, err, logs.String())
		}
	}
}

func TestNewNeedsAClient(t *testing.T) {
	if _, err := outbox.New(); err == nil || !strings.Contains(err.Error(), "Options.SQS or Options.EventBridge") {
		t.Fatalf("want an error naming the options, got %v", err)
	}
}

// TestSenderFaultsAreErrors: a message SQS refuses for itself is logged at
// ERROR, as no retry sends it; a throttled one at WARN.
func TestSenderFaultsAreErrors(t *testing.T) {
	for _, c := range []struct {
		name   string
		fault  bool
		expect string
	}{{"sender fault", true, "level=ERROR"}, {"server fault", false, "level=WARN"}} {
		t.Run(c.name, func(t *testing.T) {
			var logs strings.Builder
			fs := &faultySQS{senderFault: c.fault}
			r, err := outbox.New(func(o *outbox.Options) { o.SQS = fs; o.Logger = slog.New(slog.NewTextHandler(&logs, nil)) })
			if err != nil {
				t.Fatal(err)
			}
			resp, _ := r.Handle(context.Background(), events.DynamoDBEvent{Records: []events.DynamoDBEventRecord{record(0, queue, "a")}})
			if len(resp.BatchItemFailures) != 1 || !strings.Contains(logs.String(), c.expect) {
				t.Errorf("want the record failed and logged at %s, got %v and %q", c.expect, resp.BatchItemFailures, logs.String())
			}
		})
	}
}

type faultySQS struct{ senderFault bool }

func (f *faultySQS) SendMessageBatch(_ context.Context, in *sqs.SendMessageBatchInput, _ ...func(*sqs.Options)) (*sqs.SendMessageBatchOutput, error) {
	out := &sqs.SendMessageBatchOutput{}
	for _, e := range in.Entries {
		out.Failed = append(out.Failed, sqstypes.BatchResultErrorEntry{Id: e.Id, Code: aws.String("InvalidParameterValue"), SenderFault: f.senderFault})
	}
	return out, nil
}
