package localstack

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/idemkit/kit/idem/cmd/internal/testphase"
	"github.com/idemkit/kit/idem/idemtest"
)

// e2eBootstraps, when set, runs prebuilt functions instead of building the
// template's; nil in the repository.
var e2eBootstraps map[string]string

// TestStackEndToEnd builds the repository's two functions, runs
// template.yaml locally — its own DynamoDB and SQS servers, each function
// under the Runtime Interface Emulator — and drives it the way senders do:
// webhooks and queue messages delivered several times apply one credit
// each, and a malformed message ends in the dead-letter queue.
func TestStackEndToEnd(t *testing.T) {
	const webhookSecret, stripeSecret = "e2e-webhook-secret", "whsec_e2e"
	var out syncBuffer
	ctx := context.Background()
	phase := testphase.Start(t, "local stack end to end", "template.yaml's functions built and run under the emulator, its tables and queues on local servers")
	stack, err := Start(ctx, func(o *Options) {
		o.Template = "../../../../template.yaml"
		o.StackName = "e2e"
		o.APIAddr = "127.0.0.1:0"
		o.BuildDir = filepath.Join(shared.dir, "e2e")
		o.RIE = testRIE(t)
		o.Bootstraps = e2eBootstraps
		o.Instances = 2
		o.RetryDelay = 0
		o.PollWait = time.Second
		o.Secrets = map[string]string{"WEBHOOK_SECRET": webhookSecret, "STRIPE_WEBHOOK_SECRET": stripeSecret}
		o.Traces = true
		o.Log = &out
	})
	if err != nil {
		t.Fatalf("start: %v\n%s", err, out.String())
	}
	phase.Logf("started (builds included)")
	stopped := false
	t.Cleanup(func() {
		if !stopped {
			stack.Stop()
		}
		if t.Failed() {
			t.Logf("stack output:\n%s", out.String())
		}
	})
	accounts := stack.Tables["AccountsTable"].Name
	checks, passed := 0, 0
	run := func(name string, f func(t *testing.T)) {
		checks++
		if t.Run(name, f) {
			passed++
		}
	}

	run("webhook credits delivered six times credit once", func(t *testing.T) {
		body := `{"id":"evt_e2e_web","account":"acc-web","cents":500}`
		sig := idemtest.HMACSignature(webhookSecret, []byte(body))
		deliver := func() (int, string) {
			return post(t, stack.APIURL+"/webhooks/credits", body, map[string]string{"Idempotency-Key": "evt_e2e_web", "X-Signature": sig})
		}
		var wg sync.WaitGroup
		var mu sync.Mutex
		var bodies []string
		for range 3 { // three at once, as racing retries
			wg.Go(func() {
				code, b := deliver()
				mu.Lock()
				defer mu.Unlock()
				// With the receipts service the function holds a lease
				// while it calls out, and a delivery racing it is told
				// to retry: 409 with Retry-After.
				if code == http.StatusConflict && stack.Receipts != nil {
					return
				}
				if code != http.StatusOK {
					t.Errorf("expect 200, got %d %s", code, b)
				}
				bodies = append(bodies, b)
			})
		}
		wg.Wait()
		if len(bodies) == 0 {
			t.Errorf("expect one of the racing deliveries to be applied, got three 409s")
		}
		for range 3 { // and three after
			code, b := deliver()
			if code != http.StatusOK {
				t.Errorf("expect 200, got %d %s", code, b)
			}
			bodies = append(bodies, b)
		}
		for _, b := range bodies[1:] {
			if b != bodies[0] {
				t.Errorf("expect every delivery to get the first answer %q, got %q", bodies[0], b)
			}
		}
		if got := balance(t, stack, accounts, "acc-web"); got != 500 {
			t.Errorf("expect balance 500 (one credit), got %d", got)
		}
		if code, _ := post(t, stack.APIURL+"/webhooks/credits", body, map[string]string{"Idempotency-Key": "evt_e2e_forged", "X-Signature": "sha256=00"}); code == http.StatusOK {
			t.Errorf("expect a delivery with a wrong signature refused, got 200")
		}
		if got := balance(t, stack, accounts, "acc-web"); got != 500 {
			t.Errorf("expect balance 500 after a forged delivery, got %d", got)
		}
	})

	run("stripe event delivered three times credits once", func(t *testing.T) {
		body := `{"id":"evt_e2e_stripe","object":"event","type":"payment_intent.succeeded","data":{"object":{"id":"pi_e2e","object":"payment_intent","amount":2500,"amount_received":2500,"currency":"usd","status":"succeeded","metadata":{"account":"acc-stripe"}}}}`
		for range 3 {
			code, b := post(t, stack.APIURL+"/webhooks/stripe", body, map[string]string{
				"Stripe-Signature": idemtest.StripeSignature(stripeSecret, time.Now(), []byte(body)),
			})
			if code != http.StatusOK {
				t.Errorf("expect 200, got %d %s", code, b)
			}
		}
		if got := balance(t, stack, accounts, "acc-stripe"); got != 2500 {
			t.Errorf("expect balance 2500 (one credit), got %d", got)
		}
	})

	queue := stack.Queues["CreditsQueue"]
	dlq := stack.Queues["CreditsDeadLetterQueue"]
	client := stack.SQS()

	run("queue message sent four times credits once", func(t *testing.T) {
		body := `{"id":"evt_e2e_sqs","account":"acc-sqs","cents":700}`
		for i := range 4 {
			in := &sqs.SendMessageInput{QueueUrl: aws.String(queue.URL), MessageBody: aws.String(body)}
			if i%2 == 0 { // half name the key, half leave it to the body's id
				in.MessageAttributes = map[string]sqstypes.MessageAttributeValue{
					"IdempotencyKey": {DataType: aws.String("String"), StringValue: aws.String("evt_e2e_sqs")},
				}
			}
			if _, err := client.SendMessage(ctx, in); err != nil {
				t.Fatal(err)
			}
		}
		waitFor(t, "the queue to drain", 60*time.Second, func() bool { return queueDepth(t, client, queue.URL) == 0 })
		if got := balance(t, stack, accounts, "acc-sqs"); got != 700 {
			t.Errorf("expect balance 700 (one credit), got %d", got)
		}
	})

	run("malformed message lands in the dead-letter queue", func(t *testing.T) {
		const body = `{"id":"evt_e2e_bad","account":`
		if _, err := client.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(queue.URL), MessageBody: aws.String(body)}); err != nil {
			t.Fatal(err)
		}
		var found *sqstypes.Message
		waitFor(t, "the malformed message in the dead-letter queue", 90*time.Second, func() bool {
			out, err := client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
				QueueUrl: aws.String(dlq.URL), WaitTimeSeconds: 1, VisibilityTimeout: 0,
				MessageSystemAttributeNames: []sqstypes.MessageSystemAttributeName{sqstypes.MessageSystemAttributeNameAll},
			})
			if err != nil {
				t.Fatal(err)
			}
			for _, m := range out.Messages {
				if aws.ToString(m.Body) == body {
					found = &m
				}
			}
			return found != nil
		})
		if n, _ := strconv.Atoi(found.Attributes["ApproximateReceiveCount"]); n < queue.MaxReceiveCount() {
			t.Errorf("expect the message received %d times before the dead-letter queue, got %d", queue.MaxReceiveCount(), n)
		}
		if got := queueDepth(t, client, queue.URL); got != 0 {
			t.Errorf("expect the queue empty, got %d messages", got)
		}
	})

	run("the functions get the receipts service", func(t *testing.T) {
		if stack.Receipts == nil {
			t.Fatalf("expect a receipts service: template.yaml declares %s", receiptsEnv)
		}
		for _, id := range sortedKeys(stack.Specs) {
			if got := envMap(stack.environ(stack.Specs[id], ""))[receiptsEnv]; got != stack.Receipts.URL() {
				t.Errorf("%s: expect %s=%s, got %q", id, receiptsEnv, stack.Receipts.URL(), got)
			}
		}
		// Three credits (webhook, Stripe, queue), each delivered several
		// times, some racing: one receipt each, and, the function holding
		// its claim's lease over the call, never two calls with one key at
		// once. The malformed message is no credit: no call.
		if st := stack.Receipts.Stats(); st.Issued != 3 || st.MaxInFlight != 1 || st.Conflicts != 0 {
			t.Errorf("expect 3 receipts issued, one call at a time per key, got %+v", st)
		}
		issued := map[string]bool{}
		for _, c := range stack.Receipts.Calls() {
			issued[c.Receipt] = c.Receipt != ""
		}
		seen := map[string]string{}
		for _, acc := range []string{"acc-web", "acc-stripe", "acc-sqs"} {
			r := lastReceipt(t, stack, accounts, acc)
			if !issued[r] {
				t.Errorf("%s: expect lastReceipt one of the receipts issued, got %q", acc, r)
			}
			if other, ok := seen[r]; ok && r != "" {
				t.Errorf("%s and %s have one receipt %q", other, acc, r)
			}
			seen[r] = acc
		}
	})

	run("the ledger has one entry per credit", func(t *testing.T) {
		// Each credit above announced itself through the outbox: the relay,
		// on the claims table's stream, sent it to the ledger queue, and
		// the ledger function wrote one entry, however often the credit and
		// the announcement were delivered.
		ledger := stack.Tables["LedgerTable"].Name
		want := map[string]int{"acc-web": 500, "acc-stripe": 2500, "acc-sqs": 700}
		var items []map[string]ddbtypes.AttributeValue
		waitFor(t, "three ledger entries", 60*time.Second, func() bool {
			out, err := stack.DynamoDB().Scan(ctx, &dynamodb.ScanInput{TableName: aws.String(ledger), ConsistentRead: aws.Bool(true)})
			if err != nil {
				t.Fatal(err)
			}
			items = out.Items
			return len(items) >= len(want) && queueDepth(t, client, stack.Queues["LedgerQueue"].URL) == 0
		})
		got := map[string]int{}
		for _, it := range items {
			acc, _ := it["account"].(*ddbtypes.AttributeValueMemberS)
			cents, _ := it["cents"].(*ddbtypes.AttributeValueMemberN)
			if acc == nil || cents == nil {
				t.Fatalf("a ledger entry without its account or cents: %v", it)
			}
			n, _ := strconv.Atoi(cents.Value)
			got[acc.Value] += n
		}
		if len(items) != len(want) || fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("expect one entry per credit, %v, got %d entries: %v", want, len(items), got)
		}
		for _, p := range stack.StreamPollers {
			if st := p.Stats(); st.OnFailure != 0 {
				t.Errorf("%s: %d batches sent to the on-failure queue", p.Source.Function, st.OnFailure)
			}
		}
	})

	run("one credit's trace runs from its delivery through the relay to the ledger", func(t *testing.T) {
		// The functions export their spans (OTEL_EXPORTER_OTLP_ENDPOINT):
		// each ledger entry's delivery continues the trace its credit's
		// delivery began, through the outbox item and the relay's send.
		ledgerQueue := stack.Queues["LedgerQueue"].Name
		chains := func(spans []Span) (out [][3]Span) {
			byID := map[string]Span{}
			for _, s := range spans {
				byID[s.SpanID] = s
			}
			for _, s := range spans {
				if s.Name != "process "+ledgerQueue || s.Attrs["idem.outcome"] != "Processed" {
					continue
				}
				send, ok := byID[s.ParentID]
				if !ok || send.Name != "send "+ledgerQueue {
					continue
				}
				if credit, ok := byID[send.ParentID]; ok && credit.Attrs["idem.outcome"] == "Processed" && credit.TraceID == s.TraceID {
					out = append(out, [3]Span{credit, send, s})
				}
			}
			return out
		}
		wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		if !stack.Traces.Wait(wctx, func(spans []Span) bool { return len(chains(spans)) >= 3 }) {
			t.Fatalf("want 3 traces from a credit's delivery to its ledger entry, got %d of %d spans", len(chains(stack.Traces.Spans())), len(stack.Traces.Spans()))
		}
		c := chains(stack.Traces.Spans())[0]
		tree := Tree(stack.Traces.Trace(c[0].TraceID))
		t.Logf("one credit's trace:\n%s", tree)
		if !strings.Contains(tree, "DynamoDB.TransactWriteItems") || c[0].Service == c[1].Service || c[1].Service == c[2].Service {
			t.Errorf("want the commit's transaction in the trace, and three functions' spans, got:\n%s", tree)
		}
	})

	run("stop ends every process and frees the ports", func(t *testing.T) {
		pids := stack.PIDs()
		if len(pids) < 4 { // two servers, at least one emulator per function
			t.Errorf("expect at least 4 processes, got %v", pids)
		}
		addrs := []string{strings.TrimPrefix(stack.APIURL, "http://")}
		if stack.Receipts != nil {
			addrs = append(addrs, strings.TrimPrefix(strings.TrimSuffix(stack.Receipts.URL(), "/receipts"), "http://"))
		}
		stack.Stop()
		stopped = true
		for _, pid := range pids {
			if syscall.Kill(pid, 0) == nil {
				t.Errorf("process %d still runs after Stop", pid)
			}
		}
		for _, addr := range addrs {
			if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
				c.Close()
				t.Errorf("%s still listens after Stop", addr)
			}
		}
	})
	phase.End("%d of %d checks passed", passed, checks)
}

func post(t *testing.T, url, body string, headers map[string]string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// lastReceipt is the receipt the account's last credit stored, or "".
func lastReceipt(t *testing.T, s *Stack, table, account string) string {
	t.Helper()
	r, _ := accountItem(t, s, table, account)["lastReceipt"].(*ddbtypes.AttributeValueMemberS)
	if r == nil {
		return ""
	}
	return r.Value
}

// accountItem is the account's item, read consistently.
func accountItem(t *testing.T, s *Stack, table, account string) map[string]ddbtypes.AttributeValue {
	t.Helper()
	out, err := s.DynamoDB().GetItem(context.Background(), &dynamodb.GetItemInput{
		TableName:      aws.String(table),
		Key:            map[string]ddbtypes.AttributeValue{"account": &ddbtypes.AttributeValueMemberS{Value: account}},
		ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		t.Fatal(err)
	}
	return out.Item
}

func balance(t *testing.T, s *Stack, table, account string) int64 {
	t.Helper()
	b, ok := accountItem(t, s, table, account)["balance"].(*ddbtypes.AttributeValueMemberN)
	if !ok {
		return 0
	}
	n, err := strconv.ParseInt(b.Value, 10, 64)
	if err != nil {
		t.Fatal(fmt.Errorf("balance %q: %w", b.Value, err))
	}
	return n
}
