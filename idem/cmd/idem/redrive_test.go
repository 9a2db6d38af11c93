package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	awssdk "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/idemkit/kit/idem/idemtest"
	"github.com/idemkit/kit/idem/internal/wire"
	"github.com/idemkit/kit/idem/sqsconsumer"
)

// only is the one message dlq -json printed.
func only(t *testing.T, out string) dlqMessage {
	t.Helper()
	var m dlqMessage
	if n := strings.Count(out, "\n"); n != 1 {
		t.Fatalf("expect one message, got %d:\n%s", n, out)
	}
	if err := json.Unmarshal([]byte(out), &m); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	return m
}

// deleteFails answers the DLQ's DeleteMessage with 500 past the SDK's
// retries.
func deleteFails() *idemtest.Faults {
	return &idemtest.Faults{Rates: map[idemtest.FaultKind]float64{idemtest.FaultServerError: 1}, Operations: []string{"DeleteMessage"}}
}

// TestDLQRedriveDeleteFails: a message keyed by its messageId (DefaultKey,
// no IdempotencyKey) is redriven, and the DLQ's DeleteMessage fails past
// the SDK's retries. The run reports the copy sent, not "nothing to send";
// the consumer applies the copy under the original's key; the next run
// finds the original applied and sends nothing: one credit, never two.
func TestDLQRedriveDeleteFails(t *testing.T) {
	f := setup(t)
	d := newDeadLetters(t, f.sqsClient(), false, "credits")
	credits := d.names["credits"]
	id := d.fail(t, "credits", `{"account":"acc-1","cents":100}`, nil, "", "")

	faults := deleteFails()
	heal := f.faultSQS(t, faults)
	out, errOut := f.mustRun(t, exitFail, "dlq", "-queue", d.dlq, "-redrive", "--yes")
	t.Logf("idem dlq -redrive --yes, DeleteMessage failing\n%s%s", out, errOut)
	contains(t, "stderr", errOut, "1 message not sent or not deleted")
	contains(t, "the faulted run", out, "copy-sent", "redriven, but not deleted from the DLQ", "sent 1 to "+credits+", not deleted from", "it is not sent again")
	if strings.Contains(out, "nothing to send") {
		t.Errorf("a copy was sent: expect it reported so, got\n%s", out)
	}
	if n := faults.Counts()[idemtest.FaultServerError]; n != 3 {
		t.Errorf("expect the SDK's 3 attempts to fail, got %d", n)
	}
	heal()
	if n := d.depth(t); n != 1 {
		t.Fatalf("expect the original still in the DLQ, got %d", n)
	}

	copies := d.received(t, "credits")
	if len(copies) != 1 || copies[0].MessageId == id {
		t.Fatalf("expect one copy with a messageId of its own, got %+v", copies)
	}
	f.consumeCredits(t, copies)
	if b := f.Balance(t, "acc-1"); b != 100 {
		t.Fatalf("balance: expect 100, got %d", b)
	}

	out, _ = f.mustRun(t, exitOK, "dlq", "-queue", d.dlq, "-redrive", "--yes", "-json")
	m := only(t, out)
	if m.Class != classApplied || m.Key != id || m.Action != "" {
		t.Errorf("expect the original applied under its own messageId %s (its copy's claim), not redriven; got %s %s (%s) %q", id, m.Class, m.Key, m.Detail, m.Action)
	}
	if again := d.received(t, "credits"); len(again) != 0 {
		t.Errorf("expect nothing sent again, got %d", len(again))
		f.consumeCredits(t, again)
	}
	if b := f.Balance(t, "acc-1"); b != 100 {
		t.Errorf("balance: expect 100, got %d", b)
	}
	out, _ = f.mustRun(t, exitOK, "dlq", "-queue", d.dlq, "-delete-applied", "--yes")
	contains(t, "-delete-applied", out, "done: deleted 1 applied")
	if n := d.depth(t); n != 0 {
		t.Errorf("expect the DLQ empty, got %d", n)
	}
}

// TestDLQRedriveNotSentTwice: a copy sent whose original could not be
// deleted is remembered in a redrive marker in the processed-ids table;
// the next -redrive --yes, before the copy is consumed, sends nothing and
// deletes the original. A send that fails leaves no marker and the
// message in the DLQ.
func TestDLQRedriveNotSentTwice(t *testing.T) {
	f := setup(t)
	d := newDeadLetters(t, f.sqsClient(), false, "credits")
	id := d.fail(t, "credits", `{"account":"acc-1","cents":100}`, nil, "", "")
	markerKey := "#redrive#" + id

	t.Run("a send that fails", func(t *testing.T) {
		heal := f.faultSQS(t, &idemtest.Faults{Rates: map[idemtest.FaultKind]float64{idemtest.FaultServerError: 1}, Operations: []string{"SendMessage"}})
		defer heal()
		out, _ := f.mustRun(t, exitFail, "dlq", "-queue", d.dlq, "-redrive", "--yes")
		contains(t, "send fails", out, "not sent: ", "not done: 1 not sent or not deleted (see ACTION)")
		if it := f.item(markerKey); it != nil {
			t.Errorf("expect no marker, got %v", it)
		}
	})

	heal := f.faultSQS(t, deleteFails())
	f.mustRun(t, exitFail, "dlq", "-queue", d.dlq, "-redrive", "--yes")
	heal()
	it := f.item(markerKey)
	if s, _ := it[markerStateAttr].(*types.AttributeValueMemberS); s == nil || s.Value != markerSent {
		t.Fatalf("expect a marker saying sent, got %v", it)
	}
	if s, _ := it[wire.KindAttr].(*types.AttributeValueMemberS); s == nil || s.Value != markerKind {
		t.Errorf("expect the marker's kind %s, got %v", markerKind, it[wire.KindAttr])
	}
	if _, ok := it["expiresAt"].(*types.AttributeValueMemberN); !ok {
		t.Errorf("expect the marker to expire, got %v", it)
	}

	out, _ := f.mustRun(t, exitOK, "dlq", "-queue", d.dlq)
	contains(t, "the next run", out, "copy-sent", "an earlier run sent its copy")
	t.Logf("idem dlq, after a run whose delete failed\n%s", out)
	out, _ = f.mustRun(t, exitOK, "dlq", "-queue", d.dlq, "-redrive", "--yes")
	contains(t, "-redrive --yes again", out, "deleted: its copy was sent by an earlier run", "done: deleted 1 whose copy an earlier run sent")
	t.Logf("idem dlq -redrive --yes, again\n%s", out)
	if n := d.depth(t); n != 0 {
		t.Errorf("expect the DLQ empty, got %d", n)
	}
	copies := d.received(t, "credits")
	if len(copies) != 1 {
		t.Fatalf("expect one copy in the source queue, got %d", len(copies))
	}
	f.consumeCredits(t, copies)
	if b := f.Balance(t, "acc-1"); b != 100 {
		t.Errorf("balance: expect 100, got %d", b)
	}
}

// TestDLQRedriveFIFOInWindow: a FIFO message dead-lettered seconds after
// it was sent is redriven inside SQS's 5-minute deduplication window: the
// copy goes under a deduplication id of its own, which SQS delivers, and
// the consumer keys it by the original's (DeduplicationKey): applied once,
// and neither lost nor deleted unsent.
func TestDLQRedriveFIFOInWindow(t *testing.T) {
	f := setup(t)
	d := newDeadLetters(t, f.sqsClient(), true, "credits")
	d.fail(t, "credits", `{"account":"acc-1","cents":100}`, nil, "acc-1", "evt-1")
	out, _ := f.mustRun(t, exitOK, "dlq", "-queue", d.dlq, "-redrive", "--yes", "-json")
	if m := only(t, out); m.Class != classNever || m.Action != actionRedriven || m.Key != "acc-1/evt-1" {
		t.Errorf("expect never-applied acc-1/evt-1 redriven, got %s %s %q", m.Class, m.Key, m.Action)
	}
	copies := d.received(t, "credits")
	if len(copies) != 1 {
		t.Fatalf("expect the copy delivered, got %d messages: SQS dropped it and the DLQ's is gone", len(copies))
	}
	if got := copies[0].Attributes["MessageDeduplicationId"]; got == "evt-1" {
		t.Errorf("expect a deduplication id of the copy's own, got %s", got)
	}
	f.consumeCredits(t, copies)
	if b := f.Balance(t, "acc-1"); b != 100 {
		t.Errorf("balance: expect 100, got %d", b)
	}
	if it := f.item(d.names["credits"] + "#acc-1/evt-1"); it == nil {
		t.Errorf("expect the claim under the original's key")
	}
	if n := d.depth(t); n != 0 {
		t.Errorf("expect the DLQ empty, got %d", n)
	}
}

// TestDLQSharedBySource: one DLQ behind a credits and a refunds queue,
// whose consumer sets its own Source. Each message is classed against its
// own queue's claims and redriven to the queue it came from; a message
// without DeadLetterQueueSourceArn is refused, alone, until -source-queue
// names its queue.
func TestDLQSharedBySource(t *testing.T) {
	f := setup(t)
	d := newDeadLetters(t, f.sqsClient(), false, "credits", "refunds")
	credits, refunds := d.names["credits"], d.names["refunds"]
	key := func(k string) map[string]string { return map[string]string{"IdempotencyKey": k} }
	d.fail(t, "credits", `{"account":"acc-1","cents":100}`, key("c-1"), "", "")
	d.fail(t, "refunds", `{"account":"acc-1","cents":-40}`, key("r-1"), "", "")
	d.put(t, `{"account":"acc-1","cents":5}`, key("x-1"))

	args := []string{"dlq", "-queue", d.dlq, "-key-func", "attribute", "-source", refunds + "=refunds", "-redrive", "--yes", "-json"}
	out, errOut := f.mustRun(t, exitOK, args...)
	contains(t, "stderr", errOut, "serves 2 queues", "the claims' Source: "+refunds+"=refunds, else each source queue's name")
	want := map[string]string{
		"c-1": credits + " " + credits + "#c-1 " + classNever + " " + actionRedriven,
		"r-1": refunds + " refunds#r-1 " + classNever + " " + actionRedriven,
		"x-1": "  " + classNoSource + " ",
	}
	got := map[string]string{}
	for k, m := range classes(t, out) {
		got[strings.Fields(k)[0]] = m.SourceQueue + " " + m.ClaimKey + " " + m.Class + " " + strings.SplitN(m.Action, ":", 2)[0]
		if m.Class == classNoSource && !strings.Contains(m.Detail, "carries no DeadLetterQueueSourceArn") {
			t.Errorf("no-source: %s", m.Detail)
		}
	}
	if len(got) != 3 || got["c-1"] != want["c-1"] || got["r-1"] != want["r-1"] || !strings.HasPrefix(got["x-1"], want["x-1"]) {
		t.Errorf("expect\n%v\ngot\n%v", want, got)
	}
	for s, k := range map[string]string{"credits": "c-1", "refunds": "r-1"} {
		recs := d.received(t, s)
		if len(recs) != 1 || awssdk.ToString(recs[0].MessageAttributes["IdempotencyKey"].StringValue) != k {
			t.Errorf("%s: expect %s alone, got %+v", s, k, recs)
		}
	}
	if n := d.depth(t); n != 1 {
		t.Errorf("expect x-1 left in the DLQ, got %d", n)
	}

	out, _ = f.mustRun(t, exitOK, "dlq", "-queue", d.dlq, "-key-func", "attribute", "-source-queue", credits, "-redrive", "--yes", "-json")
	if m := only(t, out); m.Key != "x-1" || m.SourceQueue != credits || m.Action != actionRedriven {
		t.Errorf("expect x-1 sent to %s by -source-queue, got %s %s %q", credits, m.Key, m.SourceQueue, m.Action)
	}
}

// TestDLQUndecodable: a body that is not one JSON value is classed
// undecodable, apart from never-applied, and -redrive leaves it; with
// -body any it is never-applied and redriven.
func TestDLQUndecodable(t *testing.T) {
	f := setup(t)
	d := newDeadLetters(t, f.sqsClient(), false, "credits")
	d.fail(t, "credits", `{"account":`, map[string]string{"IdempotencyKey": "evt_bad"}, "", "")
	out, _ := f.mustRun(t, exitOK, "dlq", "-queue", d.dlq, "-redrive", "--yes")
	contains(t, "-body json", out, "undecodable", "the body is not one JSON value", "1 undecodable: nothing is committed", "done: nothing to send or delete")
	t.Logf("idem dlq -redrive --yes\n%s", out)
	if recs := d.received(t, "credits"); len(recs) != 0 {
		t.Errorf("expect nothing sent, got %d", len(recs))
	}
	out, _ = f.mustRun(t, exitOK, "dlq", "-queue", d.dlq, "-body", "any", "-redrive", "--yes", "-json")
	if m := only(t, out); m.Class != classNever || m.Action != actionRedriven {
		t.Errorf("-body any: expect never-applied and redriven, got %s %q", m.Class, m.Action)
	}
	if recs := d.received(t, "credits"); len(recs) != 1 {
		t.Errorf("expect the message sent, got %d", len(recs))
	}
}

// TestDLQQueueNames: a source queue given as the DLQ is named so, with
// its DLQ; an empty DLQ's listing says so, without a dangling colon.
func TestDLQQueueNames(t *testing.T) {
	f := setup(t)
	d := newDeadLetters(t, f.sqsClient(), false, "credits")
	dlqName := d.dlq[strings.LastIndexByte(d.dlq, '/')+1:]
	_, errOut := f.mustRun(t, exitUsage, "dlq", "-queue", d.url[d.names["credits"]])
	contains(t, "a source queue", errOut, d.names["credits"]+" is a source queue, not a dead-letter queue: its DLQ is "+dlqName+" (dlq -queue "+dlqName+")")
	t.Logf("idem dlq -queue SOURCE\n%s", errOut)

	out, _ := f.mustRun(t, exitOK, "dlq", "-queue", d.dlq)
	if out != "no messages read from "+dlqName+": none was visible\n" {
		t.Errorf("an empty DLQ: got %q", out)
	}
}

// TestDLQSharedFourKinds: the operator's view of a DLQ shared by a credits
// and a refunds queue, holding a message applied (its credit committed
// before its receives ran out), one never applied, one reusing an applied
// key with another body, and one whose body is not JSON. Each is classed
// against its own queue; -redrive -delete-applied --yes sends the
// never-applied one back to refunds, deletes the applied one, and leaves
// the other two for a person.
func TestDLQSharedFourKinds(t *testing.T) {
	f := setup(t)
	d := newDeadLetters(t, f.sqsClient(), false, "credits", "refunds")
	credits, refunds := d.names["credits"], d.names["refunds"]
	key := func(k string) map[string]string { return map[string]string{"IdempotencyKey": k} }
	f.consumeCredits(t, []events.SQSMessage{
		idemtest.SQSMessage(credits, `{"account":"acc-1","cents":100}`, key("c-applied")),
		idemtest.SQSMessage(refunds, `{"account":"acc-1","cents":-40}`, key("r-reused")),
	})
	d.fail(t, "credits", `{"account":"acc-1","cents":100}`, key("c-applied"), "", "")
	d.fail(t, "refunds", `{"account":"acc-2","cents":-25}`, key("r-never"), "", "")
	d.fail(t, "refunds", `{"account":"acc-1","cents":-45}`, key("r-reused"), "", "")
	d.fail(t, "credits", `{"account":"acc-3","cents":`, key("c-bad"), "", "")

	out, errOut := f.mustRun(t, exitOK, "dlq", "-queue", d.dlq)
	t.Logf("$ idem -table $TABLE dlq -queue $DLQ\n%s%s", errOut, out)
	contains(t, "the listing", out, "4 messages read", "1 applied", "1 never-applied", "1 key-reused", "1 undecodable")
	out, errOut = f.mustRun(t, exitOK, "dlq", "-queue", d.dlq, "-redrive", "-delete-applied", "--yes")
	t.Logf("$ idem -table $TABLE dlq -queue $DLQ -redrive -delete-applied --yes\n%s%s", errOut, out)
	contains(t, "the run", out, "done: sent 1 to "+refunds+" and deleted it from", "deleted 1 applied")
	if recs := d.received(t, "refunds"); len(recs) != 1 || awssdk.ToString(recs[0].MessageAttributes["IdempotencyKey"].StringValue) != "r-never" {
		t.Errorf("refunds: expect r-never alone, got %+v", recs)
	}
	if recs := d.received(t, "credits"); len(recs) != 0 {
		t.Errorf("credits: expect nothing, got %d", len(recs))
	}
	if n := d.depth(t); n != 2 {
		t.Errorf("expect the key-reused and undecodable messages left, got %d", n)
	}
}

// TestDLQRedriveUnconfirmed: a run that died after writing its marker and
// sending the copy, before it learned the send went, leaves a marker
// saying the send began. The next run says so and sends again: on FIFO
// under the same deduplication id, which SQS drops within 5 minutes, so
// one copy reaches the queue; applied once.
func TestDLQRedriveUnconfirmed(t *testing.T) {
	f := setup(t)
	d := newDeadLetters(t, f.sqsClient(), true, "credits")
	credits := d.names["credits"]
	id := d.fail(t, "credits", `{"account":"acc-1","cents":100}`, nil, "acc-1", "evt-1")
	// The dead run's marker and copy.
	marker := map[string]types.AttributeValue{}
	for k, v := range map[string]string{"pk": "#redrive#" + id, wire.KindAttr: markerKind, markerStateAttr: markerSending,
		markerQueueAttr: d.url[credits], markerAtAttr: time.Now().UTC().Format(time.RFC3339Nano), markerTokenAttr: "dead"} {
		marker[k] = &types.AttributeValueMemberS{Value: v}
	}
	if _, err := f.Client.PutItem(context.Background(), &dynamodb.PutItemInput{TableName: awssdk.String(f.Processed), Item: marker}); err != nil {
		t.Fatal(err)
	}
	if _, err := d.sq.SendMessage(context.Background(), &sqs.SendMessageInput{QueueUrl: awssdk.String(d.url[credits]),
		MessageBody: awssdk.String(`{"account":"acc-1","cents":100}`), MessageGroupId: awssdk.String("acc-1"), MessageDeduplicationId: awssdk.String("redrive-" + id),
		MessageAttributes: stringAttrs(map[string]string{sqsconsumer.RedriveMessageIDAttribute: id, sqsconsumer.RedriveDeduplicationIDAttribute: "evt-1"})}); err != nil {
		t.Fatal(err)
	}

	out, _ := f.mustRun(t, exitOK, "dlq", "-queue", d.dlq)
	contains(t, "the listing", out, "never-applied", "an earlier run began sending its copy", "did not learn whether it went")
	t.Logf("idem dlq, after a run that died mid-send\n%s", out)
	out, _ = f.mustRun(t, exitOK, "dlq", "-queue", d.dlq, "-redrive", "--yes", "-json")
	if m := only(t, out); m.Action != actionRedriven {
		t.Errorf("expect redriven, got %q", m.Action)
	}
	copies := d.received(t, "credits")
	if len(copies) != 1 {
		t.Fatalf("expect one copy, SQS dropping the second, got %d", len(copies))
	}
	f.consumeCredits(t, copies)
	if b := f.Balance(t, "acc-1"); b != 100 {
		t.Errorf("balance: expect 100, got %d", b)
	}
	if s, _ := f.item("#redrive#" + id)[markerStateAttr].(*types.AttributeValueMemberS); s == nil || s.Value != markerSent {
		t.Errorf("expect the marker to say sent, got %v", s)
	}
}
