package traces_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/idemkit/kit/idem"
	"github.com/idemkit/kit/idem/idemtest"
	"github.com/idemkit/kit/idem/sqsconsumer"
	"github.com/idemkit/kit/idem/webhook"
)

func TestMain(m *testing.M) { idemtest.Main(m) }

// env is one test's tables and a Store over them, its spans recorded when
// its options set a TracerProvider.
type env struct {
	*idemtest.Env
	client    *dynamodb.Client
	processed string
	accounts  string
	store     *idem.Store
	log       bytes.Buffer
}

func newEnv(t *testing.T, optFns ...func(*idem.Options)) *env {
	t.Helper()
	te := idemtest.NewEnv(t)
	e := &env{Env: te, client: te.Client, processed: te.Processed, accounts: te.Accounts}
	e.store = e.newStore(t, optFns...)
	return e
}

func (e *env) newStore(t *testing.T, optFns ...func(*idem.Options)) *idem.Store {
	t.Helper()
	store, err := idem.New(e.client, e.processed, append([]func(*idem.Options){func(o *idem.Options) {
		o.Logger = slog.New(slog.NewJSONHandler(&e.log, nil))
	}}, optFns...)...)
	if err != nil {
		t.Fatal(err)
	}
	return store
}

func (e *env) credit(account string, cents int) types.TransactWriteItem {
	w, err := idem.Update(e.accounts, map[string]string{"account": account}, expression.Add(expression.Name("balance"), expression.Value(cents)))
	if err != nil {
		panic(err) // a constant expression: a mistake in the test
	}
	return w
}

// creditHandler credits acc-9 with 500 cents and answers "credited".
func (e *env) creditHandler(runs *atomic.Int64) idem.Handler {
	return func(ctx context.Context, m idem.Message) (idem.Effect, error) {
		if runs != nil {
			runs.Add(1)
		}
		return idem.Effect{Writes: []types.TransactWriteItem{e.credit("acc-9", 500)}, Response: []byte("credited " + m.ID)}, nil
	}
}

// handler credits the record's {"account","cents"}.
func (e *env) handler(rec events.SQSMessage) (idem.Effect, error) {
	var b struct {
		Account string `json:"account"`
		Cents   int    `json:"cents"`
	}
	if err := json.Unmarshal([]byte(rec.Body), &b); err != nil || b.Account == "" || b.Cents <= 0 {
		return idem.Effect{}, fmt.Errorf("malformed body %q", rec.Body)
	}
	return idem.Effect{Writes: []types.TransactWriteItem{e.credit(b.Account, b.Cents)}}, nil
}

// receiver is a webhook Receiver crediting the body's account.
func (e *env) receiver(t *testing.T) *webhook.Receiver {
	t.Helper()
	r, err := webhook.New(e.store, webhook.JSONHandler(func(_ context.Context, c struct {
		Account string `json:"account"`
		Cents   int    `json:"cents"`
	}, req webhook.Request) (webhook.Response, idem.Effect, error) {
		return webhook.Response{Status: 200, Body: []byte("credited " + req.Key)}, idem.Effect{Writes: []types.TransactWriteItem{e.credit(c.Account, c.Cents)}}, nil
	}))
	if err != nil {
		t.Fatal(err)
	}
	return r
}

const (
	queueARN    = "arn:aws:sqs:us-east-1:123456789012:credits"
	ledgerQueue = "https://sqs.us-east-1.amazonaws.com/123456789012/ledger"
)

// record is an SQS record of the credits queue, with string message
// attributes given as name, value pairs.
func record(id, body string, attrs ...string) events.SQSMessage {
	r := events.SQSMessage{MessageId: id, Body: body, EventSourceARN: queueARN, EventSource: "aws:sqs"}
	for i := 0; i+1 < len(attrs); i += 2 {
		if r.MessageAttributes == nil {
			r.MessageAttributes = map[string]events.SQSMessageAttribute{}
		}
		r.MessageAttributes[attrs[i]] = events.SQSMessageAttribute{DataType: "String", StringValue: aws.String(attrs[i+1])}
	}
	return r
}

func newHandler(t *testing.T, store *idem.Store, h func(context.Context, events.SQSMessage) (idem.Effect, error), optFns ...func(*sqsconsumer.Options)) func(context.Context, events.SQSEvent) (events.SQSEventResponse, error) {
	t.Helper()
	fn, err := sqsconsumer.New(store, h, optFns...)
	if err != nil {
		t.Fatal(err)
	}
	return fn
}

// spansOf is a TracerProvider whose spans a test reads.
func spansOf() (*sdktrace.TracerProvider, *tracetest.SpanRecorder) {
	rec := tracetest.NewSpanRecorder()
	return sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec)), rec
}

func attrs(s sdktrace.ReadOnlySpan) map[string]string {
	m := map[string]string{}
	for _, kv := range s.Attributes() {
		m[string(kv.Key)] = kv.Value.String()
	}
	return m
}

// fakeTx answers every TransactWriteItems in-process with a commit. For
// CPU benchmarks only.
type fakeTx struct{}

func (fakeTx) TransactWriteItems(context.Context, *dynamodb.TransactWriteItemsInput, ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error) {
	return &dynamodb.TransactWriteItemsOutput{}, nil
}

var benchPayload = []byte(`{"id":"evt_001","account":"acc-9","cents":500}`)

func benchHandler(ctx context.Context, m idem.Message) (idem.Effect, error) {
	return idem.Effect{Writes: []types.TransactWriteItem{{Update: &types.Update{
		TableName:                 aws.String("accounts"),
		Key:                       map[string]types.AttributeValue{"account": &types.AttributeValueMemberS{Value: "acc-9"}},
		UpdateExpression:          aws.String("ADD balance :cents"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":cents": &types.AttributeValueMemberN{Value: "500"}},
	}}}, Response: []byte(`{"status":"processed"}`)}, nil
}
