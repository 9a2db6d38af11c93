package localstack

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

func TestBatchItemFailures(t *testing.T) {
	msgs := []sqstypes.Message{{MessageId: aws.String("a")}, {MessageId: aws.String("b")}}
	for _, tc := range []struct {
		name, out string
		want      []string
		err       bool
	}{
		{"empty", ``, nil, false},
		{"null", `null`, nil, false},
		{"empty object", `{}`, nil, false},
		{"empty list", `{"batchItemFailures":[]}`, nil, false},
		{"one", `{"batchItemFailures":[{"itemIdentifier":"b"}]}`, []string{"b"}, false},
		{"unknown id", `{"batchItemFailures":[{"itemIdentifier":"zz"}]}`, nil, true},
		{"empty id", `{"batchItemFailures":[{"itemIdentifier":""}]}`, nil, true},
		{"wrong key", `{"batchItemFailures":[{"id":"a"}]}`, nil, true},
		{"not json", `oops`, nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := batchItemFailures([]byte(tc.out), msgs)
			if tc.err {
				if err == nil {
					t.Fatalf("expect the whole batch to fail, got %v", got)
				}
				return
			}
			if err != nil || len(got) != len(tc.want) {
				t.Fatalf("expect %v, got %v, %v", tc.want, got, err)
			}
			for _, id := range tc.want {
				if !got[id] {
					t.Fatalf("expect %s failed, got %v", id, got)
				}
			}
		})
	}
}

// testQueues creates a queue whose dead-letter queue takes a message after
// maxReceives receives.
func testQueues(t *testing.T, client *sqs.Client, maxReceives int) (q, dlq *Queue) {
	t.Helper()
	ctx := context.Background()
	name := fmt.Sprintf("poller-%d", time.Now().UnixNano())
	create := func(name string, attrs map[string]string) *Queue {
		out, err := client.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(name), Attributes: attrs})
		if err != nil {
			t.Fatal(err)
		}
		a, err := client.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: out.QueueUrl, AttributeNames: []sqstypes.QueueAttributeName{"QueueArn"}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _, _ = client.DeleteQueue(context.Background(), &sqs.DeleteQueueInput{QueueUrl: out.QueueUrl}) })
		return &Queue{Name: name, URL: *out.QueueUrl, ARN: a.Attributes["QueueArn"], Attributes: attrs}
	}
	dlq = create(name+"-dlq", nil)
	q = create(name, map[string]string{
		"VisibilityTimeout": "60",
		"RedrivePolicy":     fmt.Sprintf(`{"deadLetterTargetArn":%q,"maxReceiveCount":%d}`, dlq.ARN, maxReceives),
	})
	return q, dlq
}

// recorder is a fake function: it records the events it gets and answers
// each batch with answer.
type recorder struct {
	mu     sync.Mutex
	events []events.SQSEvent
	answer func(events.SQSEvent) ([]byte, error)
}

func (r *recorder) Invoke(_ context.Context, _ string, payload []byte) ([]byte, error) {
	var ev events.SQSEvent
	if err := json.Unmarshal(payload, &ev); err != nil {
		return nil, err
	}
	r.mu.Lock()
	r.events = append(r.events, ev)
	r.mu.Unlock()
	return r.answer(ev)
}

func (r *recorder) received(body string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, ev := range r.events {
		for _, rec := range ev.Records {
			if rec.Body == body {
				n++
			}
		}
	}
	return n
}

// receives counts the receives of each message id, and names its body.
func (r *recorder) receives() (counts map[string]int, bodies map[string]string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	counts, bodies = map[string]int{}, map[string]string{}
	for _, ev := range r.events {
		for _, rec := range ev.Records {
			counts[rec.MessageId]++
			bodies[rec.MessageId] = rec.Body
		}
	}
	return counts, bodies
}

func runPoller(t *testing.T, p *Poller) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { p.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
}

func waitFor(t *testing.T, what string, timeout time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", timeout, what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func queueDepth(t *testing.T, client *sqs.Client, url string) int {
	t.Helper()
	out, err := client.GetQueueAttributes(context.Background(), &sqs.GetQueueAttributesInput{
		QueueUrl:       aws.String(url),
		AttributeNames: []sqstypes.QueueAttributeName{"ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"},
	})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, v := range out.Attributes {
		k, _ := strconv.Atoi(v)
		n += k
	}
	return n
}

func TestPollerDeletesSuccessesAndRedrivesFailures(t *testing.T) {
	client := newSQS(testSQS(t), "us-east-1")
	q, dlq := testQueues(t, client, 3)
	fn := &recorder{answer: func(ev events.SQSEvent) ([]byte, error) {
		var resp events.SQSEventResponse
		for _, r := range ev.Records {
			if strings.HasPrefix(r.Body, "bad") {
				resp.BatchItemFailures = append(resp.BatchItemFailures, events.SQSBatchItemFailure{ItemIdentifier: r.MessageId})
			}
		}
		return json.Marshal(resp)
	}}
	p := &Poller{
		Source: SQSEventSource{Function: "Fn", BatchSize: 10, ReportBatchItemFailures: true},
		Queue:  q, Client: client, Invoker: fn, Region: "us-east-1", Concurrency: 2, WaitTime: time.Second, Logf: t.Logf,
	}
	runPoller(t, p)
	ctx := context.Background()
	for _, body := range []string{"good-1", "good-2", "bad-1"} {
		_, err := client.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(q.URL), MessageBody: aws.String(body),
			MessageAttributes: map[string]sqstypes.MessageAttributeValue{"IdempotencyKey": {DataType: aws.String("String"), StringValue: aws.String(body)}}})
		if err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, "the failed message in the dead-letter queue", 60*time.Second, func() bool { return queueDepth(t, client, dlq.URL) == 1 })
	waitFor(t, "the queue to drain", 10*time.Second, func() bool { return queueDepth(t, client, q.URL) == 0 })
	if got := fn.received("bad-1"); got != 3 {
		t.Errorf("expect the failing message received maxReceiveCount (3) times, got %d", got)
	}
	for _, body := range []string{"good-1", "good-2"} {
		if got := fn.received(body); got != 1 {
			t.Errorf("expect %s received once and deleted, got %d", body, got)
		}
	}
	out, err := client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(dlq.URL)})
	if err != nil || len(out.Messages) != 1 || aws.ToString(out.Messages[0].Body) != "bad-1" {
		t.Fatalf("expect bad-1 in the dead-letter queue, got %+v, %v", out, err)
	}

	// The event is Lambda's: source ARN, region, attributes, message attributes.
	fn.mu.Lock()
	rec := fn.events[0].Records[0]
	fn.mu.Unlock()
	if rec.EventSource != "aws:sqs" || rec.EventSourceARN != q.ARN || rec.AWSRegion != "us-east-1" || rec.ReceiptHandle == "" || rec.Md5OfBody == "" {
		t.Errorf("record: got %+v", rec)
	}
	for _, a := range []string{"ApproximateReceiveCount", "SentTimestamp", "ApproximateFirstReceiveTimestamp"} {
		if rec.Attributes[a] == "" {
			t.Errorf("record attribute %s missing: %v", a, rec.Attributes)
		}
	}
	if k := rec.MessageAttributes["IdempotencyKey"]; k.DataType != "String" || aws.ToString(k.StringValue) != rec.Body {
		t.Errorf("message attribute IdempotencyKey: got %+v", k)
	}
	if st := p.Stats(); st.Deleted != 2 || st.Retried != 3 {
		t.Errorf("expect 2 deleted and 3 retries, got %+v", st)
	}
}

func TestPollerRetriesTheWholeBatch(t *testing.T) {
	for _, tc := range []struct {
		name   string
		answer func(events.SQSEvent) ([]byte, error)
	}{
		{"function error", func(events.SQSEvent) ([]byte, error) {
			return nil, &FunctionError{Type: "errorString", Message: "boom"}
		}},
		{"invalid batch response", func(events.SQSEvent) ([]byte, error) {
			return []byte(`{"batchItemFailures":[{"itemIdentifier":"not-in-the-batch"}]}`), nil
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			client := newSQS(testSQS(t), "us-east-1")
			q, dlq := testQueues(t, client, 2)
			var calls sync.Map
			fn := &recorder{answer: func(ev events.SQSEvent) ([]byte, error) {
				for _, r := range ev.Records {
					calls.Store(r.MessageId+"/"+r.Attributes["ApproximateReceiveCount"], true)
				}
				return tc.answer(ev)
			}}
			runPoller(t, &Poller{
				Source: SQSEventSource{Function: "Fn", BatchSize: 10, ReportBatchItemFailures: true},
				Queue:  q, Client: client, Invoker: fn, Region: "us-east-1", Concurrency: 1, WaitTime: time.Second, Logf: t.Logf,
			})
			for _, body := range []string{"one", "two"} {
				if _, err := client.SendMessage(context.Background(), &sqs.SendMessageInput{QueueUrl: aws.String(q.URL), MessageBody: aws.String(body)}); err != nil {
					t.Fatal(err)
				}
			}
			// Counted by message id: a standard queue may take one send
			// twice (an SDK retry whose first answer was lost under load,
			// seen once in CI), and each copy is then a message of its own
			// that must be received twice too.
			waitFor(t, "every message in the dead-letter queue", 60*time.Second, func() bool {
				counts, _ := fn.receives()
				return len(counts) >= 2 && queueDepth(t, client, dlq.URL) == len(counts)
			})
			counts, bodies := fn.receives()
			seen := map[string]bool{}
			for id, n := range counts {
				seen[bodies[id]] = true
				if n != 2 {
					t.Errorf("expect message %s (%s) received twice before the dead-letter queue, got %d", id, bodies[id], n)
				}
			}
			if !seen["one"] || !seen["two"] {
				t.Errorf("expect both messages received, got %v", bodies)
			}
			if len(counts) > 2 {
				t.Logf("the local SQS took a send twice: %d messages for 2 sends", len(counts))
			}
		})
	}
}
