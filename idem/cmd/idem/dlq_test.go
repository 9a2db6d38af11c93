package main

import (
	"context"
	"encoding/json"
	"errors"
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/idemkit/kit/idem"
	"github.com/idemkit/kit/idem/idemtest"
	"github.com/idemkit/kit/idem/sqsconsumer"
)

// queues is a source queue and its dead-letter queue on the local SQS.
type queues struct {
	sq                *sqs.Client
	src, dlq, srcName string
}

func newQueues(t *testing.T, sq *sqs.Client, fifo bool) queues {
	t.Helper()
	ctx := context.Background()
	suffix := strconv.FormatInt(time.Now().UnixNano(), 36)
	create := func(name string, attrs map[string]string) string {
		if fifo {
			name += ".fifo"
			attrs["FifoQueue"] = "true"
		}
		out, err := sq.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(name), Attributes: attrs})
		if err != nil {
			t.Fatal(err)
		}
		return aws.ToString(out.QueueUrl)
	}
	q := queues{sq: sq}
	q.dlq = create("credits-dlq-"+suffix, map[string]string{})
	a, err := sq.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: aws.String(q.dlq), AttributeNames: []sqstypes.QueueAttributeName{"QueueArn"}})
	if err != nil {
		t.Fatal(err)
	}
	q.src = create("credits-"+suffix, map[string]string{"RedrivePolicy": `{"deadLetterTargetArn":"` + a.Attributes["QueueArn"] + `","maxReceiveCount":"5"}`})
	q.srcName = q.src[strings.LastIndexByte(q.src, '/')+1:]
	return q
}

// put sends a message to the DLQ, as SQS moves one there after its
// receives ran out: its body and attributes as sent.
func (q queues) put(t *testing.T, body string, attrs map[string]string, group, dedup string) {
	t.Helper()
	in := &sqs.SendMessageInput{QueueUrl: aws.String(q.dlq), MessageBody: aws.String(body), MessageAttributes: map[string]sqstypes.MessageAttributeValue{}}
	for k, v := range attrs {
		in.MessageAttributes[k] = sqstypes.MessageAttributeValue{DataType: aws.String("String"), StringValue: aws.String(v)}
	}
	if group != "" {
		in.MessageGroupId, in.MessageDeduplicationId = aws.String(group), aws.String(dedup)
	}
	if _, err := q.sq.SendMessage(context.Background(), in); err != nil {
		t.Fatal(err)
	}
}

// depth is a queue's visible and in-flight message counts.
func (q queues) depth(t *testing.T, url string) (visible, held int) {
	t.Helper()
	out, err := q.sq.GetQueueAttributes(context.Background(), &sqs.GetQueueAttributesInput{QueueUrl: aws.String(url),
		AttributeNames: []sqstypes.QueueAttributeName{"ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"}})
	if err != nil {
		t.Fatal(err)
	}
	visible, _ = strconv.Atoi(out.Attributes["ApproximateNumberOfMessages"])
	held, _ = strconv.Atoi(out.Attributes["ApproximateNumberOfMessagesNotVisible"])
	return visible, held
}

// drain receives (and deletes) every message of url.
func (q queues) drain(t *testing.T, url string) []sqstypes.Message {
	t.Helper()
	var all []sqstypes.Message
	for {
		out, err := q.sq.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), MaxNumberOfMessages: 10,
			MessageAttributeNames: []string{"All"}, MessageSystemAttributeNames: []sqstypes.MessageSystemAttributeName{"All"}})
		if err != nil {
			t.Fatal(err)
		}
		if len(out.Messages) == 0 {
			return all
		}
		for _, m := range out.Messages {
			all = append(all, m)
			if _, err := q.sq.DeleteMessage(context.Background(), &sqs.DeleteMessageInput{QueueUrl: aws.String(url), ReceiptHandle: m.ReceiptHandle}); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// classes reads dlq --json's lines, by key and body digest.
func classes(t *testing.T, out string) map[string]dlqMessage {
	t.Helper()
	got := map[string]dlqMessage{}
	for line := range strings.Lines(out) {
		var m dlqMessage
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("%v: %s", err, line)
		}
		got[m.Key+" "+m.BodySHA256[:8]] = m
	}
	return got
}

// TestDLQ: messages applied by a real sqsconsumer handler, never
// processed, left pending by a leased delivery whose handler failed (its
// lease released, nothing committed: never applied), reusing an applied
// key with another body, and with no key, all in a dead-letter queue:
// each is classified against its claim; without flags nothing moves;
// --redrive --yes sends only the never-applied back to the source queue
// and removes them from the DLQ; --delete-applied --yes removes the
// applied.
func TestDLQ(t *testing.T) {
	f := setup(t)
	q := newQueues(t, f.sqsClient(), false)
	store := f.store(time.Time{})
	key := func(k string) map[string]string { return map[string]string{"IdempotencyKey": k} }
	consume(t, store,
		idemtest.SQSMessage(q.srcName, `{"cents":1}`, key("a1")),
		idemtest.SQSMessage(q.srcName, `{"cents":2}`, key("a2")))
	if _, err := store.ProcessLeased(context.Background(), idem.Message{ID: "p1", Source: q.srcName, Payload: []byte(`{"cents":5}`)},
		func(context.Context, idem.Message) (idem.Effect, error) {
			return idem.Effect{}, errors.New("timed out")
		}); err == nil {
		t.Fatal("expect the handler's error")
	}
	q.put(t, `{"cents":1}`, key("a1"), "", "")
	q.put(t, `{"cents":2}`, key("a2"), "", "")
	q.put(t, `{"cents":3}`, key("n1"), "", "")
	q.put(t, `{"cents":4}`, key("n2"), "", "")
	q.put(t, `{"cents":99}`, key("a1"), "", "") // a1 again, another body
	q.put(t, `{"cents":5}`, key("p1"), "", "")
	q.put(t, `{"cents":6}`, nil, "", "")
	want := map[string]string{"a1": classApplied, "a2": classApplied, "n1": classNever, "n2": classNever, "p1": classNever}
	dlqArgs := []string{"dlq", "-queue", q.dlq, "-key-func", "attribute", "-hold", "30s"}

	unchanged := func(t *testing.T, dlqVisible int) {
		t.Helper()
		if v, h := q.depth(t, q.dlq); v != dlqVisible || h != 0 {
			t.Errorf("DLQ: expect %d visible and none held, got %d and %d", dlqVisible, v, h)
		}
	}

	t.Run("classified, nothing moved", func(t *testing.T) {
		// The default long poll, which the other runs skip (fixture.run).
		out, errOut := f.mustRun(t, exitOK, append(dlqArgs, "-wait", "1s")...)
		contains(t, "stderr", errOut, "holds about 7 visible", "one without it against "+q.src+" (from ListDeadLetterSourceQueues)", "the claims' Source: each source queue's name")
		contains(t, "table", out, "MESSAGE ID", "2 applied", "3 never-applied", "1 key-reused", "1 unreadable",
			"nothing sent or deleted; every message read is visible again")
		t.Logf("idem dlq -queue DLQ -key-func attribute\n%s%s", errOut, out)
		unchanged(t, 7)
		if v, _ := q.depth(t, q.src); v != 0 {
			t.Errorf("source queue: expect nothing sent, got %d", v)
		}
	})

	t.Run("json", func(t *testing.T) {
		out, _ := f.mustRun(t, exitOK, append(dlqArgs, "-json")...)
		got := classes(t, out)
		if len(got) != 7 {
			t.Fatalf("expect 7 lines, got %d:\n%s", len(got), out)
		}
		for k, m := range got {
			class, ok := want[m.Key]
			switch {
			case m.Key == "":
				class = classNoKey
			case m.Key == "a1" && m.BodySHA256 != idem.Fingerprint([]byte(`{"cents":1}`)):
				class = classReused
			case !ok:
				t.Errorf("unexpected key %s", k)
			}
			if m.Class != class || m.Action != "" {
				t.Errorf("%s: expect %s and no action, got %s (%s) %q", k, class, m.Class, m.Detail, m.Action)
			}
			if m.Key != "" && m.ClaimKey != q.srcName+"#"+m.Key {
				t.Errorf("%s: claim key %s", k, m.ClaimKey)
			}
		}
		t.Logf("idem dlq ... -json\n%s", out)
		unchanged(t, 7)
	})

	t.Run("-max", func(t *testing.T) {
		out, _ := f.mustRun(t, exitOK, append(dlqArgs, "-max", "2")...)
		contains(t, "-max 2", out, "2 messages read", "that is -max: more may wait")
		unchanged(t, 7)
	})

	t.Run("--redrive without --yes", func(t *testing.T) {
		out, _ := f.mustRun(t, exitOK, append(dlqArgs, "--redrive")...)
		contains(t, "dry run", out, "dry run: nothing sent or deleted; add --yes")
		unchanged(t, 7)
	})

	t.Run("--redrive --yes", func(t *testing.T) {
		out, _ := f.mustRun(t, exitOK, append(dlqArgs, "--redrive", "--yes", "-json")...)
		redriven := 0
		for _, m := range classes(t, out) {
			if (m.Action == "redriven") != (m.Class == classNever) || (m.Action != "" && m.Action != "redriven") {
				t.Errorf("%s (%s): action %q", m.Key, m.Class, m.Action)
			}
			if m.Action == "redriven" {
				redriven++
			}
		}
		if redriven != 3 {
			t.Errorf("expect 3 redriven, got %d", redriven)
		}
		unchanged(t, 4)
		sent := map[string]string{}
		for _, m := range q.drain(t, q.src) {
			sent[aws.ToString(m.MessageAttributes["IdempotencyKey"].StringValue)] = aws.ToString(m.Body)
		}
		if w := map[string]string{"n1": `{"cents":3}`, "n2": `{"cents":4}`, "p1": `{"cents":5}`}; !maps.Equal(sent, w) {
			t.Errorf("source queue: expect %v, got %v", w, sent)
		}
	})

	t.Run("--delete-applied --yes", func(t *testing.T) {
		out, _ := f.mustRun(t, exitOK, append(dlqArgs, "--delete-applied", "--yes")...)
		contains(t, "table", out, "ACTION", "done: deleted 2 applied")
		t.Logf("idem dlq ... --delete-applied --yes\n%s", out)
		unchanged(t, 2)
		out, _ = f.mustRun(t, exitOK, append(dlqArgs, "-json")...)
		var left []string
		for _, m := range classes(t, out) {
			left = append(left, m.Class)
		}
		slices.Sort(left)
		if w := []string{classReused, classNoKey}; !slices.Equal(left, w) {
			t.Errorf("left in the DLQ: expect %v, got %v", w, left)
		}
	})
}

// TestDLQFIFO: a FIFO DLQ's never-applied message goes back to its FIFO
// source queue in its message group, under a deduplication id of its own
// and keyed as sqsconsumer.DeduplicationKey keyed the original; the
// applied one stays.
func TestDLQFIFO(t *testing.T) {
	f := setup(t)
	q := newQueues(t, f.sqsClient(), true)
	consume(t, f.store(time.Time{}), idemtest.FIFO(idemtest.SQSMessage(q.srcName, `{"cents":1}`, nil), "acc-1", "d-1"))
	q.put(t, `{"cents":1}`, nil, "acc-1", "d-1")
	q.put(t, `{"cents":2}`, nil, "acc-2", "d-2")
	out, _ := f.mustRun(t, exitOK, "dlq", "-queue", q.dlq, "-key-func", "dedup", "--redrive", "--yes", "-json")
	got := map[string]string{}
	for _, m := range classes(t, out) {
		got[m.Key] = m.Class + " " + m.Action
	}
	if w := map[string]string{"acc-1/d-1": classApplied + " ", "acc-2/d-2": classNever + " redriven"}; !maps.Equal(got, w) {
		t.Errorf("expect %v, got %v", w, got)
	}
	sent := q.drain(t, q.src)
	if len(sent) != 1 || sent[0].Attributes["MessageGroupId"] != "acc-2" || aws.ToString(sent[0].Body) != `{"cents":2}` {
		t.Fatalf("expect the never-applied message in group acc-2, got %+v", sent)
	}
	// Under a deduplication id of its own, and keyed as the original.
	if key, err := sqsconsumer.DeduplicationKey(idemtest.Received(sent[0], "")); sent[0].Attributes["MessageDeduplicationId"] == "d-2" || err != nil || key != "acc-2/d-2" {
		t.Errorf("expect the copy under a deduplication id of its own, keyed acc-2/d-2; got %s, keyed %q, %v", sent[0].Attributes["MessageDeduplicationId"], key, err)
	}
	if v, _ := q.depth(t, q.dlq); v != 1 {
		t.Errorf("DLQ: expect the applied message left, got %d", v)
	}
}
