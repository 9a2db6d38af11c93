package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/idemkit/kit/idem"
	"github.com/idemkit/kit/idem/cmd/internal/localstack"
	"github.com/idemkit/kit/idem/idemtest"
	"github.com/idemkit/kit/idem/internal/wire"
	"github.com/idemkit/kit/idem/outbox"
)

// The transactional outbox (issue 13): what one outgoing message adds to
// a delivery, how fast the relay empties a stream into SQS, and how long a
// credit takes to reach the ledger through the whole local stack.

// outboxResult is the outbox section of a run.
type outboxResult struct {
	latN                 int
	plain, withMessage   []leasePass // calls and latency per first delivery, by server
	relayN, relayBatches int
	relaySends           int // SendMessageBatch calls
	relayTime            time.Duration
	relayOwn             time.Duration // the same relay to an SQS answering at once
	parRTT               time.Duration // the SQS stand-in's round trip
	par                  []relayParRun // one batch to it, one call at a time and concurrent
	e2eN                 int
	e2e                  []time.Duration // delivery to ledger entry, on the local stack
	e2eSkipped           string
}

// outboxEnv is the outbox section's tables and Store on one server.
type outboxEnv struct {
	su                  setup
	processed, accounts string
	store               *idem.Store
}

func newOutboxEnv(ctx context.Context, endpoint string) (*outboxEnv, error) {
	e := &outboxEnv{su: setup{calls: &idemtest.CallCounter{}}}
	e.su.client = idemtest.Client(endpoint, e.su.calls.Option)
	var err error
	if e.processed, err = idemtest.CreateTableContext(ctx, e.su.client, idemtest.Table{Name: "bench-outbox-processed", HashKey: "pk", TTLAttribute: "expiresAt"}); err != nil {
		return nil, err
	}
	if _, err := e.su.client.UpdateTable(ctx, &dynamodb.UpdateTableInput{TableName: aws.String(e.processed),
		StreamSpecification: &types.StreamSpecification{StreamEnabled: aws.Bool(true), StreamViewType: types.StreamViewTypeNewImage}}); err != nil {
		return nil, err
	}
	if e.accounts, err = idemtest.CreateTableContext(ctx, e.su.client, idemtest.Table{Name: "bench-outbox-accounts", HashKey: "account"}); err != nil {
		return nil, err
	}
	e.store, err = idem.New(e.su.client, e.processed, quietStore)
	return e, err
}

// runOutbox measures the first deliveries on every server, taking turns;
// the relay and the ledger latency on the local server and stack.
func runOutbox(ctx context.Context, servers []server, latN, relayN, e2eN int, parRTT time.Duration) (*outboxResult, error) {
	res := &outboxResult{latN: latN, relayN: relayN, e2eN: e2eN, parRTT: parRTT}
	var envs []*outboxEnv
	for _, sv := range servers {
		e, err := newOutboxEnv(ctx, sv.endpoint)
		if err != nil {
			return nil, err
		}
		envs = append(envs, e)
	}
	local := envs[0]
	su, processed, store := local.su, local.processed, local.store
	sqsSrv, err := idemtest.StartSQS(ctx, func(o *idemtest.ServerOptions) { o.Log = io.Discard })
	if err != nil {
		return nil, err
	}
	defer sqsSrv.Stop()
	var sends int
	sq := sqs.New(sqs.Options{Region: "us-east-1", BaseEndpoint: aws.String(sqsSrv.Endpoint),
		Credentials: credentials.NewStaticCredentialsProvider("bench", "bench", ""), HTTPClient: countingClient{&sends}})
	q, err := sq.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("bench-ledger")})
	if err != nil {
		return nil, err
	}
	queueURL := aws.ToString(q.QueueUrl)

	// One first delivery with the credit alone, the next with the credit
	// and one message, taking turns, each on every server in turn.
	log.Printf("idem-bench: outbox: %d first deliveries with and without a message", latN)
	handler := func(e *outboxEnv, withMessage bool) idem.Handler {
		return func(_ context.Context, m idem.Message) (idem.Effect, error) {
			w, err := idem.Update(e.accounts, map[string]string{"account": "acc-1"}, expression.Add(expression.Name("balance"), expression.Value(1)))
			eff := idem.Effect{Writes: []types.TransactWriteItem{w}}
			if withMessage {
				eff.Messages = []idem.OutgoingMessage{{Destination: queueURL, Type: "credit.applied", Body: `{"account":"acc-1","cents":1,"id":"` + m.ID + `"}`}}
			}
			return eff, err
		}
	}
	lat := make([][2][]time.Duration, len(envs))
	calls := make([][2]int, len(envs))
	for i := range 2 * latN {
		mode := i % 2
		for j, e := range envs {
			e.su.calls.Reset()
			start := time.Now()
			if _, err := e.store.Process(ctx, idem.Message{ID: fmt.Sprint("lat-", i), Source: "bench"}, handler(e, mode == 1)); err != nil {
				return nil, err
			}
			lat[j][mode] = append(lat[j][mode], time.Since(start))
			calls[j][mode] += messageCalls(e.su.calls)
		}
	}
	for j := range envs {
		pass := func(mode int) leasePass {
			return leasePass{calls: float64(calls[j][mode]) / float64(latN), p50: percentile(lat[j][mode], 0.5), p99: percentile(lat[j][mode], 0.99)}
		}
		res.plain, res.withMessage = append(res.plain, pass(0)), append(res.withMessage, pass(1))
	}

	// The relay: every outbox item of the stream, in batches of 100 as
	// the event source mapping hands them over, to the local SQS.
	log.Printf("idem-bench: outbox: %d more messages relayed", relayN)
	for i := range relayN {
		if _, err := store.Process(ctx, idem.Message{ID: fmt.Sprint("relay-", i), Source: "bench"}, handler(local, true)); err != nil {
			return nil, err
		}
	}
	recs, err := idemtest.ReadStream(ctx, su.client, processed)
	if err != nil {
		return nil, err
	}
	var items []events.DynamoDBEventRecord
	for _, r := range recs {
		if k, ok := r.Change.NewImage[wire.KindAttr]; ok && k.DataType() == events.DataTypeString && k.String() == wire.Kind {
			items = append(items, r)
		}
	}
	relay, err := outbox.New(func(o *outbox.Options) { o.SQS = sq; o.Logger = slog.New(slog.DiscardHandler) })
	if err != nil {
		return nil, err
	}
	sends = 0
	start := time.Now()
	for p := 0; p < len(items); p += 100 {
		resp, err := relay.Handle(ctx, events.DynamoDBEvent{Records: items[p:min(p+100, len(items))]})
		if err != nil || len(resp.BatchItemFailures) > 0 {
			return nil, fmt.Errorf("outbox: the relay failed: %v %v", err, resp.BatchItemFailures)
		}
		res.relayBatches++
	}
	res.relayTime, res.relaySends, res.relayN = time.Since(start), sends, len(items)

	// The relay's own cost: the same batches to an SQS answering at once.
	fast, err := outbox.New(func(o *outbox.Options) { o.SQS = instantSQS{}; o.Logger = slog.New(slog.DiscardHandler) })
	if err != nil {
		return nil, err
	}
	start = time.Now()
	for range 5 {
		for p := 0; p < len(items); p += 100 {
			if _, err := fast.Handle(ctx, events.DynamoDBEvent{Records: items[p:min(p+100, len(items))]}); err != nil {
				return nil, err
			}
		}
	}
	res.relayOwn = time.Since(start) / 5

	// One batch of 100, as the event source mapping hands them over, to
	// an SQS whose every call takes parRTT: the sends in sequence and
	// concurrent.
	if len(items) > 0 && parRTT > 0 {
		log.Printf("idem-bench: outbox: a batch of %d to an SQS stand-in answering after %v, one call at a time and concurrent", min(100, len(items)), parRTT)
		if res.par, err = runRelayPar(ctx, items[:min(100, len(items))], parRTT); err != nil {
			return nil, err
		}
	}

	if e2eN > 0 {
		if res.e2e, err = ledgerLatency(ctx, e2eN); err != nil {
			res.e2eSkipped = err.Error()
			log.Printf("idem-bench: outbox: the local stack's ledger latency skipped: %v", err)
		}
	}
	return res, nil
}

// instantSQS takes every message at once: the relay's own cost, without
// a server's.
type instantSQS struct{}

func (instantSQS) SendMessageBatch(_ context.Context, in *sqs.SendMessageBatchInput, _ ...func(*sqs.Options)) (*sqs.SendMessageBatchOutput, error) {
	out := &sqs.SendMessageBatchOutput{Successful: make([]sqstypes.SendMessageBatchResultEntry, len(in.Entries))}
	for i, e := range in.Entries {
		out.Successful[i] = sqstypes.SendMessageBatchResultEntry{Id: e.Id, MessageId: e.Id}
	}
	return out, nil
}

// countingClient counts the SQS calls the relay makes.
type countingClient struct{ n *int }

func (c countingClient) Do(req *http.Request) (*http.Response, error) {
	*c.n++
	return http.DefaultClient.Do(req)
}

// ledgerLatency runs template.yaml locally, as make local does, and times
// n webhook credits, one after another, from the request to their ledger
// entry: the credit function's commit, the relay on the stream, the
// ledger queue and the ledger function.
func ledgerLatency(ctx context.Context, n int) ([]time.Duration, error) {
	if _, err := os.Stat("template.yaml"); err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "idem-bench-stack-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	const secret = "bench-webhook-secret"
	log.Printf("idem-bench: outbox: the local stack (functions built with make), %d credits to the ledger", n)
	stack, err := localstack.Start(ctx, func(o *localstack.Options) {
		o.Template, o.StackName, o.APIAddr, o.BuildDir = "template.yaml", "bench", "127.0.0.1:0", filepath.Join(dir, "build")
		o.Go, o.Make = goCmd, makeCmd
		o.Secrets = map[string]string{"WEBHOOK_SECRET": secret, "STRIPE_WEBHOOK_SECRET": "whsec_bench"}
		o.Log, o.AccessLog, o.FunctionOutput, o.ServerLog = io.Discard, io.Discard, io.Discard, io.Discard
	})
	if err != nil {
		if stack != nil {
			stack.Stop()
		}
		return nil, err
	}
	defer stack.Stop()
	ledger, ok := stack.Tables["LedgerTable"]
	processed, ok2 := stack.Tables["ProcessedTable"]
	if !ok || !ok2 {
		return nil, fmt.Errorf("template.yaml has no LedgerTable or ProcessedTable")
	}
	var out []time.Duration
	for i := range n {
		key := fmt.Sprintf("bench-e2e-%d-%d", time.Now().UnixNano(), i)
		body := fmt.Sprintf(`{"id":%q,"account":"acc-bench","cents":1}`, key)
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, stack.APIURL+"/webhooks/credits", strings.NewReader(body))
		req.Header.Set("Idempotency-Key", key)
		req.Header.Set("X-Signature", idemtest.HMACSignature(secret, []byte(body)))
		start := time.Now()
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return nil, err
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return nil, fmt.Errorf("credit %d: %d %s", i, resp.StatusCode, bytes.TrimSpace(b))
		}
		// The ledger entry is keyed by the outbox id, which names the claim.
		entry, err := sentID(ctx, stack.DynamoDB(), processed.Name, "credits#"+key)
		if err != nil {
			return nil, err
		}
		for {
			it, err := stack.DynamoDB().GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(ledger.Name), ConsistentRead: aws.Bool(true),
				Key: map[string]types.AttributeValue{"entry": &types.AttributeValueMemberS{Value: entry}}})
			if err != nil {
				return nil, err
			}
			if len(it.Item) > 0 {
				break
			}
			if time.Since(start) > 30*time.Second {
				return nil, fmt.Errorf("credit %d: no ledger entry %s after 30 s", i, entry)
			}
			time.Sleep(2 * time.Millisecond)
		}
		out = append(out, time.Since(start))
	}
	return out, nil
}

// sentID is the outbox id of the first message the claim key committed,
// derived from the claim as the kit derives it.
func sentID(ctx context.Context, c *dynamodb.Client, table, key string) (string, error) {
	out, err := c.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(table), ConsistentRead: aws.Bool(true),
		Key: map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: key}}})
	if err != nil {
		return "", err
	}
	at, _ := out.Item["claimedAt"].(*types.AttributeValueMemberS)
	if at == nil {
		return "", fmt.Errorf("no claim %s in %s", key, table)
	}
	claimed, err := time.Parse(time.RFC3339Nano, at.Value)
	if err != nil {
		return "", err
	}
	return wire.ID(table, key, claimed, 0), nil
}
