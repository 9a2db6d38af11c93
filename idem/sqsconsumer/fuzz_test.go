package sqsconsumer_test

// Fuzz targets for what a producer controls: a record's attributes, its
// message attributes and its body. Run the seeds with go test; explore with
// make fuzz. DynamoDB is answered in-process by fuzzClaims: these test
// decoding and the batch response, not the claim, which the other tests
// run against the real local endpoint.

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"

	"github.com/idemkit/kit/idem"
	"github.com/idemkit/kit/idem/sqsconsumer"
)

// fuzzRecord builds a record from fuzzed fields; the key attribute is set
// only when dataType is not empty.
func fuzzRecord(id, body, dataType, value string, noValue bool, dedup, group, arn string) events.SQSMessage {
	rec := events.SQSMessage{MessageId: id, Body: body, EventSourceARN: arn, EventSource: "aws:sqs"}
	if dedup != "" || group != "" {
		rec.Attributes = map[string]string{"MessageDeduplicationId": dedup, "MessageGroupId": group}
	}
	if dataType != "" {
		a := events.SQSMessageAttribute{DataType: dataType, StringValue: aws.String(value)}
		if noValue {
			a.StringValue, a.BinaryValue = nil, []byte(value)
		}
		rec.MessageAttributes = map[string]events.SQSMessageAttribute{sqsconsumer.KeyAttribute: a}
	}
	return rec
}

// FuzzKey: reading a key never panics, DefaultKey is its documented order
// (the attribute, stopping at its error, then the group and deduplication
// id, then the messageId), and QueueName is the ARN's last segment.
func FuzzKey(f *testing.F) {
	f.Add("m-1", "String", "evt_1", false, "", "", "arn:aws:sqs:us-east-1:1:credits")
	f.Add("m-1", "String.uuid", "", false, "dedup-1", "g", "arn:aws:sqs:us-east-1:1:credits.fifo")
	f.Add("m-1", "Number", "7", false, "", "", "credits")
	f.Add("m-1", "String", "", true, "", "", "")
	f.Add("", "Binary", "\x00\xff", true, "", "", ":")
	f.Add("", "", "", false, "", "", "")
	f.Add("m\r\n", "String", "k\r\nX-Injected: 1\x00", false, "d\x00", "", "arn:\xff")
	f.Add("m-1", "", "", false, "x/y", "A%2F/x", "arn:aws:sqs:us-east-1:1:credits.fifo")
	f.Fuzz(func(t *testing.T, id, dataType, value string, noValue bool, dedup, group, arn string) {
		rec := fuzzRecord(id, "", dataType, value, noValue, dedup, group, arn)
		attr, attrErr := sqsconsumer.AttributeKey(rec)
		got, err := sqsconsumer.DefaultKey(rec)
		var want string
		switch {
		case attrErr != nil:
			if err == nil {
				t.Fatalf("the attribute's error %v was skipped over: got key %q", attrErr, got)
			}
			return
		case attr != "":
			want = attr
		case dedup != "":
			// The key decodes back to its group and id: no two pairs
			// share one.
			g, d, _ := strings.Cut(got, "/")
			if ug, uerr := url.PathUnescape(g); err != nil || uerr != nil || ug != group || d != dedup {
				t.Fatalf("DeduplicationKey of group %q, id %q: got %q, %v, which reads back as %q, %q", group, dedup, got, err, ug, d)
			}
			want = got
		default:
			want = id
		}
		if err != nil || got != want {
			t.Fatalf("expect %q, got %q, %v", want, got, err)
		}
		if attr != "" && (dataType != "String" && !strings.HasPrefix(dataType, "String.") || attr != value) {
			t.Fatalf("AttributeKey accepted %q from a %q attribute holding %q", attr, dataType, value)
		}
		q := sqsconsumer.QueueName(arn)
		if !strings.HasSuffix(arn, q) || strings.Contains(q, ":") {
			t.Fatalf("QueueName(%q) = %q, not the last segment", arn, q)
		}
	})
}

// fuzzCredit is the fuzzed adapter's record body: a credit, strictly read.
type fuzzCredit struct {
	Account string `json:"account"`
	Cents   int64  `json:"cents"`
}

func parseFuzzCredit(body string) (fuzzCredit, error) {
	var c fuzzCredit
	if err := json.Unmarshal([]byte(body), &c); err != nil {
		return c, err
	}
	if c.Account == "" || c.Cents <= 0 {
		return c, errors.New("want an account and positive cents")
	}
	return c, nil
}

// fuzzClaims answers TransactWriteItems in process: a claim (a Put on the
// processed table) fails its condition when its key is held, and the
// transaction is cancelled with DynamoDB's reasons; fail makes a call fail
// with throttling instead, as a faulted client would.
type fuzzClaims struct {
	mu    sync.Mutex
	held  map[string]map[string]types.AttributeValue
	calls int
	fail  uint8 // bit i%8 set: call i fails
}

func (c *fuzzClaims) TransactWriteItems(_ context.Context, in *dynamodb.TransactWriteItemsInput, _ ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.calls++
	if c.fail&(1<<(c.calls%8)) != 0 {
		return nil, &smithy.GenericAPIError{Code: "ThrottlingException", Message: "fuzzed", Fault: smithy.FaultServer}
	}
	reasons := make([]types.CancellationReason, len(in.TransactItems))
	cancelled := false
	for i, w := range in.TransactItems {
		reasons[i].Code = aws.String("None")
		if w.Put == nil || aws.ToString(w.Put.TableName) != "processed" {
			continue
		}
		if old, ok := c.held[w.Put.Item["pk"].(*types.AttributeValueMemberS).Value]; ok {
			reasons[i] = types.CancellationReason{Code: aws.String("ConditionalCheckFailed"), Item: old}
			cancelled = true
		}
	}
	if cancelled {
		return nil, &types.TransactionCanceledException{Message: aws.String("fuzzed"), CancellationReasons: reasons}
	}
	for _, w := range in.TransactItems {
		if w.Put != nil && aws.ToString(w.Put.TableName) == "processed" {
			c.held[w.Put.Item["pk"].(*types.AttributeValueMemberS).Value] = w.Put.Item
		}
	}
	return &dynamodb.TransactWriteItemsOutput{}, nil
}

// FuzzBatch: the adapter answers any batch (copies of one fuzzed record
// under their own messageIds, on a standard or FIFO queue, in either mode)
// with a batch response and no error, names only the batch's records, and,
// when DynamoDB never fails, fails exactly the records whose key or body
// is unusable.
func FuzzBatch(f *testing.F) {
	f.Add("m-1", `{"account":"acc-9","cents":500}`, "String", "evt_1", "", "", false, uint8(3), false, uint8(0))
	f.Add("m-1", `{"account":"acc-9","cents":500}`, "", "", "dedup-1", "g", true, uint8(4), true, uint8(0))
	f.Add("m-1", `{"account":"acc-9","cents":-1}`, "", "", "", "", false, uint8(1), false, uint8(0))
	f.Add("", `{"account":"acc-9","cents":1}`, "", "", "", "", false, uint8(0), true, uint8(0))
	f.Add("m-1", "{\"account\":\"\xff\",\"cents\":1}", "Number", "1", "", "", false, uint8(2), true, uint8(0x55))
	f.Add("m-1", `{"account":"a","cents":1}`, "String", strings.Repeat("k", 2100), "", "", false, uint8(2), false, uint8(0))
	f.Add("m-1", `{"account":"a","cents":1}`, "String", "k\xff", "", "g", true, uint8(9), false, uint8(0xff))
	f.Fuzz(func(t *testing.T, id, body, dataType, value, dedup, group string, fifo bool, copies uint8, batch bool, fail uint8) {
		claims := &fuzzClaims{held: map[string]map[string]types.AttributeValue{}, fail: fail}
		store, err := idem.New(claims, "processed", func(o *idem.Options) {
			o.Logger = slog.New(slog.DiscardHandler)
			o.MaxAttempts = 1
		})
		if err != nil {
			t.Fatal(err)
		}
		h := newHandler(t, store, func(_ context.Context, rec events.SQSMessage) (idem.Effect, error) {
			c, err := parseFuzzCredit(rec.Body)
			if err != nil {
				return idem.Effect{}, err
			}
			w, err := idem.Update("accounts", map[string]string{"account": c.Account}, expression.Add(expression.Name("balance"), expression.Value(c.Cents)))
			return idem.Effect{Writes: []types.TransactWriteItem{w}}, err
		}, func(o *sqsconsumer.Options) { o.BatchTransactions = batch })
		arn := "arn:aws:sqs:us-east-1:123456789012:credits"
		if fifo {
			arn += ".fifo"
		}
		var ev events.SQSEvent
		ids := map[string]bool{}
		for j := range 1 + int(copies%10) {
			rid := id
			if j > 0 {
				rid += "-" + strconv.Itoa(j) // distinct, as SQS's are
			}
			ids[rid] = true
			ev.Records = append(ev.Records, fuzzRecord(rid, body, dataType, value, false, dedup, group, arn))
		}
		resp, err := h(context.Background(), ev)
		if err != nil || resp.BatchItemFailures == nil {
			t.Fatalf("expect a batch response and no error, got %v, %v", resp.BatchItemFailures, err)
		}
		failed := map[string]bool{}
		for _, f := range resp.BatchItemFailures {
			if !ids[f.ItemIdentifier] || failed[f.ItemIdentifier] {
				t.Fatalf("batchItemFailures names %q, not a record of the batch or twice", f.ItemIdentifier)
			}
			failed[f.ItemIdentifier] = true
		}
		if fail != 0 {
			return
		}
		stopped := false // a FIFO group stops at its first failure
		for _, rec := range ev.Records {
			key, kerr := sqsconsumer.DefaultKey(rec)
			claimKey := "credits#" + key
			if fifo {
				claimKey = "credits.fifo#" + key
			}
			_, perr := parseFuzzCredit(rec.Body)
			want := kerr != nil || key == "" || !utf8.ValidString(claimKey) || len(claimKey) > 2048 || perr != nil || stopped
			if got := failed[rec.MessageId]; got != want {
				t.Fatalf("record %q (key %q, %v; body %v): expect failed %v, got %v", rec.MessageId, key, kerr, perr, want, got)
			}
			stopped = stopped || fifo && want
		}
	})
}
