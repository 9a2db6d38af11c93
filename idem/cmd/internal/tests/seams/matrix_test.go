package seams_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambdacontext"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/idemkit/kit/idem"
	"github.com/idemkit/kit/idem/idemtest"
	"github.com/idemkit/kit/idem/kafkaconsumer"
	"github.com/idemkit/kit/idem/outbox"
)

// cell is one feature run through one way.
type cell struct {
	t   *testing.T
	w   *world
	way way
	log []string // each delivery's outcome, in order
}

// send delivers m through the cell's way, built on s, and returns the one
// outcome the Store observed for it.
func (c *cell) send(ctx context.Context, s *idem.Store, m msg, h handler, p panics) idem.Outcome {
	c.t.Helper()
	n := c.w.rec.len()
	err := c.way.deliver(ctx, s, m, h, p)
	got := c.w.rec.since(n)
	if len(got) != 1 {
		c.t.Fatalf("%s: want one outcome observed, got %v (%v)", m.id, got, err)
	}
	if (err == nil) != slices.Contains([]idem.Outcome{idem.Processed, idem.Duplicate, idem.Rejected}, got[0]) {
		c.t.Errorf("%s: the sender was told %v for %s", m.id, err, got[0])
	}
	c.log = append(c.log, string(got[0]))
	return got[0]
}

// expect checks the outcomes of the cell's deliveries so far.
func (c *cell) expect(want ...idem.Outcome) {
	c.t.Helper()
	var w []string
	for _, o := range want {
		w = append(w, string(o))
	}
	if strings.Join(c.log, " ") != strings.Join(w, " ") {
		c.t.Errorf("want %v, got %v", w, c.log)
	}
}

// balance checks acc-1's balance.
func (c *cell) balance(want int64) {
	c.t.Helper()
	if got := c.w.Balance(c.t, "acc-1"); got != want {
		c.t.Errorf("balance: want %d, got %d", want, got)
	}
}

// credit is a handler crediting acc-1 with 1, announcing it when send.
func (c *cell) credit(send bool) handler {
	return func(context.Context) (idem.Effect, error) {
		eff := idem.Effect{Writes: []types.TransactWriteItem{c.w.credit("acc-1", 1)}}
		if send {
			eff.Messages = []idem.OutgoingMessage{{Destination: ledgerQueue, Type: "credit.applied", Body: `{"cents":1}`}}
		}
		return eff, nil
	}
}

// rejected is a handler whose write's condition fails, the rejection
// recorded; recording it panics when panicky.
func (c *cell) rejected(panicky bool) handler {
	return func(context.Context) (idem.Effect, error) {
		return idem.Effect{Writes: []types.TransactWriteItem{c.w.refused("acc-1")}, Rejected: func(*idem.RejectedError) ([]byte, error) {
			if panicky {
				panic("boom")
			}
			return nil, nil
		}}, nil
	}
}

var (
	m1 = msg{"m-1", "scope-a", `{"n":1}`}
	m2 = msg{"m-1", "scope-a", `{"n":2}`} // m1's id with another payload
)

// feature is a row of the matrix: run plays it through one way and checks
// what it expects; na names the ways (or kinds of ways) it does not apply
// to, and why.
type feature struct {
	name string
	na   map[string]string
	run  func(c *cell)
}

var keyless = map[string]string{
	"Process":        "the caller gives the id: no key function",
	"ProcessLeased":  "the caller gives the id: no key function",
	"stream.Claimed": "the record's eventID is the key: no key function",
}

var features = []feature{
	{name: "a first delivery, then a redelivery (cache off: one call each)", run: func(c *cell) {
		s := c.w.store(c.t)
		c.send(context.Background(), s, m1, c.credit(false), panics{})
		c.w.Calls.Reset()
		c.send(context.Background(), s, m1, c.credit(false), panics{})
		if n := c.w.Calls.Count(""); n != 1 {
			c.t.Errorf("the redelivery: want 1 call, got %d", n)
		}
		c.expect(idem.Processed, idem.Duplicate)
		c.balance(1)
	}},
	{name: "the claim cache on: the redelivery makes no call", run: func(c *cell) {
		s := c.w.store(c.t, func(o *idem.Options) { o.CacheSize = 10 })
		c.send(context.Background(), s, m1, c.credit(false), panics{})
		c.w.Calls.Reset()
		c.send(context.Background(), s, m1, c.credit(false), panics{})
		if n := c.w.Calls.Count(""); n != 0 {
			c.t.Errorf("the cached redelivery: want no call, got %d", n)
		}
		c.expect(idem.Processed, idem.Duplicate)
		c.balance(1)
	}},
	{name: "an expired claim that lingers, the same payload: a new message", run: func(c *cell) {
		s := c.w.store(c.t, func(o *idem.Options) { o.CacheSize = 10 })
		c.send(context.Background(), s, m1, c.credit(false), panics{})
		c.w.advance(49 * time.Hour) // retention: 2 days
		c.send(context.Background(), s, m1, c.credit(false), panics{})
		c.expect(idem.Processed, idem.Processed)
		c.balance(2)
	}},
	{name: "an expired claim that lingers, another payload: a new message", run: func(c *cell) {
		s := c.w.store(c.t)
		c.send(context.Background(), s, m1, c.credit(false), panics{})
		c.w.advance(49 * time.Hour)
		c.send(context.Background(), s, m2, c.credit(false), panics{})
		c.expect(idem.Processed, idem.Processed)
		c.balance(2)
	}},
	{name: "an expired pending claim (a leased delivery that failed), another payload", run: func(c *cell) {
		// A leased delivery of the key leaves its claim pending; the way
		// under test meets it once expired. A Mux's Source is the route,
		// a Kafka record's its topic and cluster.
		s := c.w.store(c.t)
		source := m1.source
		switch {
		case c.way.byRoute:
			source = "POST /" + m1.source
		case strings.HasPrefix(c.way.name, "kafkaconsumer"):
			source = m1.source + "@" + kafkaconsumer.ClusterTag(idemtest.KafkaEvent())
		}
		down := func(context.Context, idem.Message) (idem.Effect, error) { return idem.Effect{}, errors.New("down") }
		if _, err := s.ProcessLeased(context.Background(), idem.Message{ID: m1.id, Source: source, Payload: []byte(`{"n":0}`)}, down); err == nil {
			c.t.Fatal("want the leased delivery to fail")
		}
		c.w.advance(49 * time.Hour)
		c.send(context.Background(), s, m2, c.credit(false), panics{})
		c.expect(idem.Processed)
		c.balance(1)
	}},
	{name: "a duplicate storm: a duplicate reads its claim beside its transaction, an expired claim still claimed anew", na: map[string]string{
		"ProcessLeased":       "the lease's UpdateItem is a single write already",
		"sqsconsumer batch":   "ProcessBatch makes no read",
		"kafkaconsumer batch": "ProcessBatch makes no read",
	}, run: func(c *cell) {
		s := c.w.store(c.t)
		ctx := context.Background()
		for i := range 8 { // each message thrice: the sender's deliveries are mostly duplicates
			for range 3 {
				if err := c.way.deliver(ctx, s, msg{fmt.Sprint("storm-", i), m1.source, m1.payload}, c.credit(false), panics{}); err != nil {
					c.t.Fatal(err)
				}
			}
		}
		c.w.Calls.Reset()
		c.send(ctx, s, msg{"storm-0", m1.source, m1.payload}, c.credit(false), panics{})
		// The world's clock stands still, so the read cannot tell the claim
		// it finds from one this delivery's transaction made: the
		// transaction, sent beside it, answers.
		if g, tx := c.w.Calls.Count("GetItem"), c.w.Calls.Count("TransactWriteItems"); g != 1 || tx > 1 {
			c.t.Errorf("a duplicate in the storm: want 1 GetItem and at most 1 transaction, got %d and %d", g, tx)
		}
		c.w.advance(49 * time.Hour)
		c.send(ctx, s, msg{"storm-1", m1.source, m1.payload}, c.credit(false), panics{})
		c.expect(idem.Duplicate, idem.Processed)
		c.balance(9)
	}},
	{name: "key reuse: the id with another payload", run: func(c *cell) {
		s := c.w.store(c.t, func(o *idem.Options) { o.CacheSize = 10 })
		c.send(context.Background(), s, m1, c.credit(false), panics{})
		c.send(context.Background(), s, m2, c.credit(false), panics{})
		c.expect(idem.Processed, idem.KeyReuse)
		c.balance(1)
	}},
	{name: "a recorded rejection, replayed", run: func(c *cell) {
		s := c.w.store(c.t)
		c.send(context.Background(), s, m1, c.rejected(false), panics{})
		c.send(context.Background(), s, m1, c.rejected(false), panics{})
		c.expect(idem.Rejected, idem.Duplicate)
		c.balance(0)
		if n := c.w.Claims(c.t); n != 1 {
			c.t.Errorf("want the rejection's claim, got %d claims", n)
		}
	}},
	{name: "outgoing messages: one per claim, ids apart across generations, tables and scopes, one id per relay resend", run: func(c *cell) {
		idemtest.EnableStream(c.t, c.w.Client, c.w.Processed)
		other := idemtest.ProcessedTable(c.t, c.w.Client)
		s, t2 := c.w.store(c.t), c.w.storeOn(c.t, other)
		ctx := context.Background()
		c.send(ctx, s, m1, c.credit(true), panics{})
		c.send(ctx, s, m1, c.credit(true), panics{})
		c.send(ctx, s, msg{m1.id, "scope-b", m1.payload}, c.credit(true), panics{})
		c.send(ctx, t2, m1, c.credit(true), panics{})
		c.w.advance(49 * time.Hour)
		c.send(ctx, s, m1, c.credit(true), panics{})
		c.expect(idem.Processed, idem.Duplicate, idem.Processed, idem.Processed, idem.Processed)
		sent := append(idemtest.Outbox(c.t, c.w.Client, c.w.Processed), idemtest.Outbox(c.t, c.w.Client, other)...)
		seen := map[string]bool{}
		for _, m := range sent {
			seen[m.ID] = true
		}
		if len(sent) != 4 || len(seen) != 4 {
			c.t.Errorf("want 4 messages under 4 ids, got %d under %d: %+v", len(sent), len(seen), sent)
		}
		// The relay, twice over the same stream records (a batch retried):
		// each message under its one id both times.
		keys := relayTwice(c.t, c.w, c.w.Processed)
		for i, k := range keys {
			if !seen[k] || keys[(i+len(keys)/2)%len(keys)] != k {
				c.t.Errorf("relayed keys %v: want each of the outbox's ids, the same on the resend", keys)
				break
			}
		}
	}},
	{name: "scopes apart: one id from two senders", run: func(c *cell) {
		s := c.w.store(c.t)
		c.send(context.Background(), s, m1, c.credit(false), panics{})
		c.send(context.Background(), s, msg{m1.id, "scope-b", m2.payload}, c.credit(false), panics{})
		c.expect(idem.Processed, idem.Processed)
		c.balance(2)
	}},
	{name: "prefixes apart: one id in two Stores sharing a table", run: func(c *cell) {
		a := c.w.store(c.t, func(o *idem.Options) { o.KeyPrefix = "A#" })
		b := c.w.store(c.t, func(o *idem.Options) { o.KeyPrefix = "B#" })
		c.send(context.Background(), a, m1, c.credit(false), panics{})
		c.send(context.Background(), b, m2, c.credit(false), panics{})
		c.expect(idem.Processed, idem.Processed)
		c.balance(2)
	}},
	{name: "tenants apart: one id from two tenants' senders, each redelivery its own tenant's Duplicate, the cache on", run: func(c *cell) {
		s := c.w.store(c.t, func(o *idem.Options) { o.CacheSize = 10 })
		for _, tenant := range []string{"blue", "green", "blue", "green"} {
			ctx := lambdacontext.NewContext(context.Background(), &lambdacontext.LambdaContext{AwsRequestID: "req", TenantID: tenant})
			c.send(ctx, s, m1, c.credit(false), panics{})
		}
		c.expect(idem.Processed, idem.Processed, idem.Duplicate, idem.Duplicate)
		c.balance(2)
	}},
	{name: "the handler panics: that delivery fails, nothing committed", run: func(c *cell) {
		s := c.w.store(c.t)
		c.send(context.Background(), s, m1, func(context.Context) (idem.Effect, error) { return boom[idem.Effect]() }, panics{})
		c.balance(0)
		c.send(context.Background(), s, m1, c.credit(false), panics{})
		c.expect(idem.Failed, idem.Processed)
		c.balance(1)
	}},
	{name: "Effect.Rejected panics", run: func(c *cell) {
		s := c.w.store(c.t)
		c.send(context.Background(), s, m1, c.rejected(true), panics{})
		c.send(context.Background(), s, m1, c.rejected(false), panics{})
		c.expect(idem.Failed, idem.Rejected)
	}},
	{name: "the key function panics", na: keyless, run: func(c *cell) {
		s := c.w.store(c.t)
		c.send(context.Background(), s, m1, c.credit(false), panics{key: true})
		c.send(context.Background(), s, m1, c.credit(false), panics{})
		c.expect(idem.Failed, idem.Processed)
		c.balance(1)
	}},
	{name: "the fingerprint function panics", na: map[string]string{
		"Process": "Message.Fingerprint is a value", "ProcessLeased": "Message.Fingerprint is a value",
		"sqsconsumer": "the payload's digest is the fingerprint", "sqsconsumer batch": "the payload's digest is the fingerprint",
		"kafkaconsumer": "the value's digest is the fingerprint", "kafkaconsumer batch": "the value's digest is the fingerprint",
		"stream.Claimed": "the sequence number is the payload",
	}, run: func(c *cell) {
		s := c.w.store(c.t)
		c.send(context.Background(), s, m1, c.credit(false), panics{fingerprint: true})
		c.send(context.Background(), s, m1, c.credit(false), panics{})
		c.expect(idem.Failed, idem.Processed)
		c.balance(1)
	}},
	{name: "the verifier panics", na: map[string]string{
		"Process": "no verifier", "ProcessLeased": "no verifier", "sqsconsumer": "no verifier", "sqsconsumer batch": "no verifier",
		"kafkaconsumer": "no verifier", "kafkaconsumer batch": "no verifier", "Wrap": "no verifier", "stream.Claimed": "no verifier",
	}, run: func(c *cell) {
		s := c.w.store(c.t)
		c.send(context.Background(), s, m1, c.credit(false), panics{verifier: true})
		c.send(context.Background(), s, m1, c.credit(false), panics{})
		c.expect(idem.Failed, idem.Processed)
		c.balance(1)
	}},
	{name: "Message.Replay panics on a duplicate", na: map[string]string{
		"sqsconsumer": "the adapter replays nothing", "sqsconsumer batch": "the adapter replays nothing", "stream.Claimed": "the adapter replays nothing",
		"kafkaconsumer": "the adapter replays nothing", "kafkaconsumer batch": "the adapter replays nothing",
		"Wrap": "Wrap's own Replay decodes its stored answer", "webhook": "the Receiver's own Replay decodes its stored answer",
	}, run: func(c *cell) {
		s := c.w.store(c.t)
		c.send(context.Background(), s, m1, c.credit(false), panics{})
		c.send(context.Background(), s, m1, c.credit(false), panics{replay: true})
		c.expect(idem.Processed, idem.Failed)
		c.balance(1)
	}},
	{name: "the deadline has passed: nothing committed, the retry applies", run: func(c *cell) {
		s := c.w.store(c.t)
		past, cancel := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
		defer cancel()
		c.send(past, s, m1, c.credit(false), panics{})
		c.balance(0)
		c.send(context.Background(), s, m1, c.credit(false), panics{})
		c.expect(idem.Failed, idem.Processed)
		c.balance(1)
	}},
}

// TestMatrix runs every feature through every way, each cell on tables of
// its own, and logs the table of outcomes.
func TestMatrix(t *testing.T) {
	table := map[string]map[string]string{}
	for _, f := range features {
		table[f.name] = map[string]string{}
		for _, wy := range ways {
			why, ok := f.na[wy.name]
			if !ok && wy.kind != "" {
				why, ok = f.na[wy.kind]
			}
			if ok {
				table[f.name][wy.name] = "n/a: " + why
				continue
			}
			t.Run(f.name+"/"+wy.name, func(t *testing.T) {
				c := &cell{t: t, w: newWorld(t), way: wy}
				f.run(c)
				table[f.name][wy.name] = strings.Join(c.log, ", ")
			})
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "\n| feature |")
	for _, wy := range ways {
		fmt.Fprintf(&b, " %s |", wy.name)
	}
	fmt.Fprintf(&b, "\n|---|%s\n", strings.Repeat("---|", len(ways)))
	for _, f := range features {
		fmt.Fprintf(&b, "| %s |", f.name)
		for _, wy := range ways {
			fmt.Fprintf(&b, " %s |", table[f.name][wy.name])
		}
		b.WriteString("\n")
	}
	t.Log(b.String())
}

// relayTwice relays the outbox items of table's stream twice to an SQS
// stand-in, as a retried batch is, and returns the IdempotencyKey of each
// message sent, in order.
func relayTwice(t *testing.T, w *world, table string) []string {
	t.Helper()
	var recs []events.DynamoDBEventRecord
	for _, r := range idemtest.StreamRecords(t, w.Client, table) {
		if k, ok := r.Change.NewImage["kind"]; ok && k.DataType() == events.DataTypeString && k.String() == "outbox" {
			recs = append(recs, r)
		}
	}
	q := &sqsStandIn{}
	relay, err := outbox.New(func(o *outbox.Options) { o.SQS = q })
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if resp, err := relay.Handle(context.Background(), events.DynamoDBEvent{Records: recs}); err != nil || len(resp.BatchItemFailures) > 0 {
			t.Fatalf("relay: %v, %v", resp.BatchItemFailures, err)
		}
	}
	return q.keys
}

type sqsStandIn struct{ keys []string }

func (q *sqsStandIn) SendMessageBatch(_ context.Context, in *sqs.SendMessageBatchInput, _ ...func(*sqs.Options)) (*sqs.SendMessageBatchOutput, error) {
	out := &sqs.SendMessageBatchOutput{}
	for _, e := range in.Entries {
		q.keys = append(q.keys, *e.MessageAttributes["IdempotencyKey"].StringValue)
		out.Successful = append(out.Successful, sqstypes.SendMessageBatchResultEntry{Id: e.Id})
	}
	return out, nil
}
