package idem_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemkit/kit/idem"
	"github.com/idemkit/kit/idem/idemtest"
)

// fakeTx answers every TransactWriteItems in-process: a commit, or, when dup
// is set, the cancellation a duplicate gets. For CPU benchmarks only.
type fakeTx struct {
	dup *types.TransactionCanceledException
}

func (f *fakeTx) TransactWriteItems(context.Context, *dynamodb.TransactWriteItemsInput, ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error) {
	if f.dup != nil {
		return nil, f.dup
	}
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

// BenchmarkProcess is the kit's own CPU cost per message, the DynamoDB call
// answered in-process. Metrics go to io.Discard as the write itself is
// Lambda's; logs are on at INFO, as deployed.
func BenchmarkProcess(b *testing.B) {
	dup := &types.TransactionCanceledException{CancellationReasons: []types.CancellationReason{
		{Code: aws.String("ConditionalCheckFailed"), Item: map[string]types.AttributeValue{
			"pk":          &types.AttributeValueMemberS{Value: "credits#evt_001"},
			"fingerprint": &types.AttributeValueMemberS{Value: idem.Fingerprint(benchPayload)},
			"claimedAt":   &types.AttributeValueMemberS{Value: "2026-11-30T00:00:00Z"},
			"expiresAt":   &types.AttributeValueMemberN{Value: "1798000000"},
			"outcome":     &types.AttributeValueMemberS{Value: "Processed"},
			"response":    &types.AttributeValueMemberB{Value: []byte(`{"status":"processed"}`)},
		}},
		{Code: aws.String("None")},
	}}
	for _, bc := range []struct {
		name string
		fake *fakeTx
	}{{"first", &fakeTx{}}, {"duplicate", &fakeTx{dup: dup}}} {
		b.Run(bc.name, func(b *testing.B) {
			store, err := idem.New(bc.fake, "processed", func(o *idem.Options) {
				o.Logger = slog.New(slog.NewJSONHandler(io.Discard, nil))
			})
			if err != nil {
				b.Fatal(err)
			}
			msg := idem.Message{ID: "evt_001", Source: "credits", Payload: benchPayload}
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				if _, err := store.Process(ctx, msg, benchHandler); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkCallsPerDelivery counts DynamoDB calls against the real local
// endpoint: a first delivery and a duplicate should each cost one.
func BenchmarkCallsPerDelivery(b *testing.B) {
	calls := &idemtest.CallCounter{}
	c := idemtest.Client(idemtest.Endpoint(b), calls.Option)
	processed := idemtest.ProcessedTable(b, c)
	accounts := idemtest.CreateTable(b, c, idemtest.Table{Name: "accounts", HashKey: "account"})
	store, err := idem.New(c, processed, func(o *idem.Options) {})
	if err != nil {
		b.Fatal(err)
	}
	handler := func(ctx context.Context, m idem.Message) (idem.Effect, error) {
		eff, _ := benchHandler(ctx, m)
		eff.Writes[0].Update.TableName = aws.String(accounts)
		return eff, nil
	}
	ctx := context.Background()
	var first, dup int
	for i := 0; b.Loop(); i++ {
		msg := idem.Message{ID: fmt.Sprint("evt_", i), Source: "credits", Payload: benchPayload}
		calls.Reset()
		if res, err := store.Process(ctx, msg, handler); err != nil || res.Outcome != idem.Processed {
			b.Fatalf("first delivery: %v %v", res.Outcome, err)
		}
		first += calls.Count("")
		calls.Reset()
		if res, err := store.Process(ctx, msg, handler); err != nil || res.Outcome != idem.Duplicate {
			b.Fatalf("duplicate: %v %v", res.Outcome, err)
		}
		dup += calls.Count("")
	}
	b.ReportMetric(float64(first)/float64(b.N), "calls/first")
	b.ReportMetric(float64(dup)/float64(b.N), "calls/duplicate")
}
