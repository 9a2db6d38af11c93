package chaos_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/idemkit/kit/idem"
	"github.com/idemkit/kit/idem/idemtest"
	"github.com/idemkit/kit/idem/sqsconsumer"
	"github.com/idemkit/kit/idem/webhook"
)

const (
	queueARN = "arn:aws:sqs:us-east-1:123456789012:chaos-credits"
	secret   = "chaos-secret"
	// giveUp bounds one delivery's redeliveries, so a delivery that can
	// never succeed fails the test as lost instead of hanging it.
	giveUp = 100
	// lambdaTimeout is each invoke's deadline, as Lambda puts it on ctx.
	lambdaTimeout = 30 * time.Second
)

// message is one message and what became of its deliveries.
type message struct {
	id      string // its ledger item
	key     string // its idempotency key
	form    int    // how the key travels (see the transports)
	account string
	cents   int
	copies  int          // deliveries planned: 1 to 5
	ok      atomic.Int32 // deliveries that succeeded
	failed  atomic.Int32 // deliveries reported failed, each redelivered
	// failedOther counts the failures of TestChaosLease's deliveries
	// other than a live lease met, which it bounds by giveUp.
	failedOther atomic.Int32
}

// credit is a message's body.
type credit struct {
	ID      string `json:"id,omitempty"`
	Msg     string `json:"msg"`
	Account string `json:"account"`
	Cents   int    `json:"cents"`
}

func (m *message) body(withKey bool) string {
	c := credit{Msg: m.id, Account: m.account, Cents: m.cents}
	if withKey {
		c.ID = m.key
	}
	b, _ := json.Marshal(c)
	return string(b)
}

// sqsRun plays the event source mapping: batches of up to 10 records, and
// the records named in batchItemFailures back on the queue.
type sqsRun struct {
	t *testing.T
	// handlers are the adapter with a transaction per record, and with
	// BatchTransactions.
	handlers [2]func(context.Context, events.SQSEvent) (events.SQSEventResponse, error)
	q        *queue[*sqsDelivery]
	gaveUp   atomic.Int32
}

type sqsDelivery struct {
	m        *message
	rec      events.SQSMessage
	attempts int
}

// newSQSRun queues every copy of msgs. A message with form 0 is re-sent by
// its producer: each copy has its own messageId and carries the
// IdempotencyKey attribute; the others are redeliveries of one messageId.
func newSQSRun(t *testing.T, store *idem.Store, tb *tables, msgs []*message, q func([]*sqsDelivery) *queue[*sqsDelivery]) *sqsRun {
	h := func(_ context.Context, rec events.SQSMessage) (idem.Effect, error) {
		var c credit
		if err := json.Unmarshal([]byte(rec.Body), &c); err != nil {
			return idem.Effect{}, err
		}
		return idem.Effect{Writes: tb.effect(c.Msg, c.Account, c.Cents)}, nil
	}
	var ds []*sqsDelivery
	for _, m := range msgs {
		for n := range m.copies {
			rec := events.SQSMessage{MessageId: "m-" + m.id, Body: m.body(false), EventSource: "aws:sqs", EventSourceARN: queueARN}
			if m.form == 0 {
				rec.MessageId = fmt.Sprintf("m-%s-%d", m.id, n)
				rec.MessageAttributes = map[string]events.SQSMessageAttribute{
					sqsconsumer.KeyAttribute: {DataType: "String", StringValue: aws.String(m.key)},
				}
			}
			ds = append(ds, &sqsDelivery{m: m, rec: rec})
		}
	}
	r := &sqsRun{t: t, q: q(ds)}
	for i, batch := range []bool{false, true} {
		var err error
		if r.handlers[i], err = sqsconsumer.New(store, h, func(o *sqsconsumer.Options) { o.BatchTransactions = batch }); err != nil {
			t.Fatal(err)
		}
	}
	return r
}

// distinctIDs keeps two records with one messageId out of a batch: SQS
// never has one message in flight twice in a batch, and batchItemFailures
// names records by messageId.
func distinctIDs(batch []*sqsDelivery, d *sqsDelivery) bool {
	for _, b := range batch {
		if b.rec.MessageId == d.rec.MessageId {
			return false
		}
	}
	return true
}

// worker invokes the adapter in one of its modes until the queue is done.
func (r *sqsRun) worker(batchTransactions bool) {
	handler := r.handlers[0]
	if batchTransactions {
		handler = r.handlers[1]
	}
	for {
		batch := r.q.take(10, distinctIDs)
		if batch == nil {
			return
		}
		ev := events.SQSEvent{}
		inBatch := map[string]bool{}
		for _, d := range batch {
			ev.Records = append(ev.Records, d.rec)
			inBatch[d.rec.MessageId] = true
		}
		ctx, cancel := context.WithTimeout(context.Background(), lambdaTimeout)
		resp, err := handler(ctx, ev)
		cancel()
		failed := map[string]bool{}
		if err != nil { // a function error returns the whole batch
			r.t.Errorf("the batch handler returned an error: %v", err)
			for id := range inBatch {
				failed[id] = true
			}
		}
		for _, f := range resp.BatchItemFailures {
			if !inBatch[f.ItemIdentifier] {
				r.t.Errorf("batchItemFailures names %q, not in the batch", f.ItemIdentifier)
			}
			failed[f.ItemIdentifier] = true
		}
		var retry []*sqsDelivery
		for _, d := range batch {
			if !failed[d.rec.MessageId] {
				d.m.ok.Add(1)
				continue
			}
			d.m.failed.Add(1)
			if d.attempts++; d.attempts >= giveUp {
				r.gaveUp.Add(1)
				continue
			}
			retry = append(retry, d)
		}
		r.q.settle(len(batch), retry)
	}
}

// webRun plays webhook senders: every answer other than a 2xx is retried.
type webRun struct {
	t        *testing.T
	r        *webhook.Receiver
	q        *queue[*webDelivery]
	replayed atomic.Int32
	gaveUp   atomic.Int32

	mu       sync.Mutex
	statuses map[int]int // non-2xx answers by status
}

type webDelivery struct {
	m        *message
	n        int // which copy
	attempts int // failures other than a copy in flight
	inFlight int // 409s: another copy in flight in the process
}

func newWebRun(t *testing.T, store *idem.Store, tb *tables, msgs []*message, q func([]*webDelivery) *queue[*webDelivery]) *webRun {
	r, err := webhook.New(store, webhook.JSONHandler(func(_ context.Context, c credit, req webhook.Request) (webhook.Response, idem.Effect, error) {
		resp, err := webhook.JSON(200, map[string]string{"id": req.Key, "status": "processed"})
		return resp, idem.Effect{Writes: tb.effect(c.Msg, c.Account, c.Cents)}, err
	}), func(o *webhook.Options) {
		o.Source = "chaos-webhook"
		o.Verifier = &webhook.HMACVerifier{Secrets: []string{secret}}
		o.Key = webhook.IdempotencyKey("id")
	})
	if err != nil {
		t.Fatal(err)
	}
	var ds []*webDelivery
	for _, m := range msgs {
		for n := range m.copies {
			ds = append(ds, &webDelivery{m: m, n: n})
		}
	}
	return &webRun{t: t, r: r, q: q(ds), statuses: map[int]int{}}
}

func (r *webRun) worker() {
	for {
		batch := r.q.take(1, nil)
		if batch == nil {
			return
		}
		d := batch[0]
		status, replayed, body := r.send(d)
		if status/100 == 2 {
			if want := fmt.Sprintf(`{"id":%q,"status":"processed"}`, d.m.key); status != 200 || body != want {
				r.t.Errorf("%s: expect 200 %s, got %d %s", d.m.id, want, status, body)
			}
			if replayed {
				r.replayed.Add(1)
			}
			d.m.ok.Add(1)
			r.q.settle(1, nil)
			continue
		}
		r.mu.Lock()
		r.statuses[status]++
		r.mu.Unlock()
		d.m.failed.Add(1)
		if status == 409 && d.inFlight < giveUp {
			// Another copy is in flight in the process, maybe in its
			// retries' backoff: the sender comes back after its own
			// (doubling, at most a second, as a 409's Retry-After asks),
			// which is no failure to count against the give-up. Retried
			// at once, a copy near the run's end, where the queue is
			// short, would spend its give-up within one backoff.
			pause := min(20*time.Millisecond<<min(d.inFlight, 6), time.Second)
			d.inFlight++
			time.AfterFunc(pause, func() { r.q.settle(1, []*webDelivery{d}) })
			continue
		}
		if d.attempts++; d.attempts >= giveUp {
			r.gaveUp.Add(1)
			r.q.settle(1, nil)
			continue
		}
		r.q.settle(1, []*webDelivery{d})
	}
}

// send delivers one copy. The key travels by the message's form: 0 the
// bare Idempotency-Key header, 1 the header as a structured-field string,
// 2 the body's "id". Copies and attempts alternate between payload formats
// 1.0 and 2.0 and base64 bodies: the same payload each time.
func (r *webRun) send(d *webDelivery) (status int, replayed bool, body string) {
	m := d.m
	raw := m.body(m.form == 2)
	h := map[string]string{"Content-Type": "application/json", "X-Signature": idemtest.HMACSignature(secret, []byte(raw))}
	switch m.form {
	case 0:
		h["Idempotency-Key"] = m.key
	case 1:
		h["Idempotency-Key"] = strconv.Quote(m.key)
	}
	wire, b64 := raw, (d.n+d.attempts)%3 == 0
	if b64 {
		wire = base64.StdEncoding.EncodeToString([]byte(raw))
	}
	ctx, cancel := context.WithTimeout(context.Background(), lambdaTimeout)
	defer cancel()
	var hs map[string]string
	if (d.n+d.attempts)%2 == 0 {
		multi := map[string][]string{}
		for k, v := range h {
			multi[k] = []string{v}
		}
		// A REST API's event, served as a function behind one is: by a Mux.
		ev, err := json.Marshal(events.APIGatewayProxyRequest{HTTPMethod: "POST", Path: "/hook", Resource: "/hook",
			Headers: h, MultiValueHeaders: multi, Body: wire, IsBase64Encoded: b64})
		if err != nil {
			r.t.Fatal(err)
		}
		out, _ := webhook.Mux{"POST /hook": r.r}.Handle(ctx, ev)
		resp, _ := out.(events.APIGatewayProxyResponse)
		status, hs, body = resp.StatusCode, resp.Headers, resp.Body
	} else {
		lower := map[string]string{}
		for k, v := range h {
			lower[strings.ToLower(k)] = v
		}
		ev := events.APIGatewayV2HTTPRequest{Version: "2.0", RouteKey: "POST /hook", RawPath: "/hook", Headers: lower, Body: wire, IsBase64Encoded: b64}
		ev.RequestContext.HTTP.Method = "POST"
		resp, _ := r.r.HandleV2(ctx, ev)
		status, hs, body = resp.StatusCode, resp.Headers, resp.Body
	}
	return status, hs["Idempotent-Replayed"] == "true", body
}
