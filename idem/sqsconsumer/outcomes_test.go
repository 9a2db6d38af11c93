package sqsconsumer_test

import (
	"context"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemkit/kit/idem"
	"github.com/idemkit/kit/idem/sqsconsumer"
)

func TestKeyFailuresAreReported(t *testing.T) {
	e := newEnv(t)
	numberKey := record("m-number", `{"account":"acc-9","cents":1}`)
	numberKey.MessageAttributes = map[string]events.SQSMessageAttribute{sqsconsumer.KeyAttribute: {DataType: "Number", StringValue: aws.String("7")}}
	batch := []events.SQSMessage{
		record("m-ok", `{"account":"acc-9","cents":1}`),
		numberKey,
		record("m-empty", `{"account":"acc-9","cents":1}`, sqsconsumer.KeyAttribute, ""),
		record("m-panic", `{"account":"acc-9","cents":1}`),
		record("", `{"account":"acc-9","cents":1}`),
	}
	got := e.run(t, context.Background(), batch, func(o *sqsconsumer.Options) {
		o.Key = func(rec events.SQSMessage) (string, error) {
			if rec.MessageId == "m-panic" {
				panic("no key here")
			}
			return sqsconsumer.DefaultKey(rec)
		}
	})
	checkFailed(t, got, "m-number", "m-empty", "m-panic", "")
	e.checkBalances(t, map[string]int{"acc-9": 1})
	checkOutcomes(t, e.outcomes(t), map[idem.Outcome]int{idem.Processed: 1, idem.Failed: 4})
	for _, want := range []string{`data type \"Number\"`, "is empty", "no key here", sqsconsumer.ErrNoKey.Error()} {
		if !strings.Contains(e.logs.String(), want) {
			t.Errorf("log does not say %q:\n%s", want, e.logs.String())
		}
	}
}

func TestKeyReuseFails(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	checkFailed(t, e.run(t, ctx, []events.SQSMessage{record("m1", `{"account":"acc-9","cents":500}`, sqsconsumer.KeyAttribute, "evt_1")}))
	checkFailed(t, e.run(t, ctx, []events.SQSMessage{record("m2", `{"account":"acc-9","cents":900}`, sqsconsumer.KeyAttribute, "evt_1")}), "m2")
	e.checkBalances(t, map[string]int{"acc-9": 500})
	checkOutcomes(t, e.outcomes(t), map[idem.Outcome]int{idem.Processed: 1, idem.KeyReuse: 1})
	if !strings.Contains(e.logs.String(), "storedFingerprint") {
		t.Errorf("key reuse is logged without both fingerprints:\n%s", e.logs.String())
	}
}

func TestRecordedRejectionIsSuccess(t *testing.T) {
	e := newEnv(t)
	debit := debit(e.Accounts, "acc-9", 100)
	h := newHandler(t, e.store, func(_ context.Context, rec events.SQSMessage) (idem.Effect, error) {
		eff := idem.Effect{Writes: []types.TransactWriteItem{debit}}
		if rec.Body == "recorded" {
			eff.Rejected = func(*idem.RejectedError) ([]byte, error) { return []byte("insufficient funds"), nil }
		}
		return eff, nil
	})
	resp, err := h(context.Background(), events.SQSEvent{Records: []events.SQSMessage{record("m1", "recorded"), record("m2", "unrecorded")}})
	if err != nil || len(resp.BatchItemFailures) != 1 || resp.BatchItemFailures[0].ItemIdentifier != "m2" {
		t.Fatalf("want only the unrecorded rejection m2 failed, got %v, %v", resp.BatchItemFailures, err)
	}
	checkOutcomes(t, e.outcomes(t), map[idem.Outcome]int{idem.Rejected: 1, idem.Failed: 1})
}

func TestKeysAreScopedByQueue(t *testing.T) {
	e := newEnv(t)
	other := record("m2", `{"account":"acc-9","cents":1}`, sqsconsumer.KeyAttribute, "k")
	other.EventSourceARN = "arn:aws:sqs:us-east-1:123456789012:refunds"
	batch := []events.SQSMessage{record("m1", `{"account":"acc-9","cents":1}`, sqsconsumer.KeyAttribute, "k"), other}
	checkFailed(t, e.run(t, context.Background(), batch))
	e.checkBalances(t, map[string]int{"acc-9": 2})
	// One Source for both queues: one scope, so one effect.
	batch[0].MessageAttributes[sqsconsumer.KeyAttribute] = events.SQSMessageAttribute{DataType: "String", StringValue: aws.String("k2")}
	batch[1].MessageAttributes[sqsconsumer.KeyAttribute] = events.SQSMessageAttribute{DataType: "String", StringValue: aws.String("k2")}
	checkFailed(t, e.run(t, context.Background(), batch, func(o *sqsconsumer.Options) { o.Source = "credits" }))
	e.checkBalances(t, map[string]int{"acc-9": 3})
}
