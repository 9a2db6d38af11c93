package sqsconsumer_test

import (
	"context"
	"fmt"
	"log/slog"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemkit/kit/idem"
)

// acceptAll commits every transaction at once: the benchmark measures the
// adapter's and the core's CPU, not DynamoDB.
type acceptAll struct{}

func (acceptAll) TransactWriteItems(context.Context, *dynamodb.TransactWriteItemsInput, ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error) {
	return &dynamodb.TransactWriteItemsOutput{}, nil
}

// BenchmarkSQSAdapter is the CPU cost of one batch; ns/msg divides it by
// the batch's records. "Process" is the core alone on one message, the
// baseline the adapter adds to.
func BenchmarkSQSAdapter(b *testing.B) {
	store, err := idem.New(acceptAll{}, "processed", func(o *idem.Options) {
		o.Logger = slog.New(slog.DiscardHandler)
	})
	if err != nil {
		b.Fatal(err)
	}
	write := credit("accounts", "acc-9", 500)
	h := newHandler(b, store, func(context.Context, events.SQSMessage) (idem.Effect, error) {
		return idem.Effect{Writes: []types.TransactWriteItem{write}}, nil
	})
	b.Run("Process", func(b *testing.B) {
		b.ReportAllocs()
		msg := idem.Message{ID: "m0", Source: "credits", Payload: []byte(`{"id":"evt_001","account":"acc-9","cents":500}`)}
		ctx := context.Background()
		for b.Loop() {
			if _, err := store.Process(ctx, msg, func(context.Context, idem.Message) (idem.Effect, error) {
				return idem.Effect{Writes: []types.TransactWriteItem{write}}, nil
			}); err != nil {
				b.Fatal(err)
			}
		}
	})
	for _, n := range []int{1, 10} {
		ev := events.SQSEvent{}
		for i := range n {
			ev.Records = append(ev.Records, record(fmt.Sprint("m", i), `{"id":"evt_001","account":"acc-9","cents":500}`))
		}
		b.Run(fmt.Sprint("batch=", n), func(b *testing.B) {
			b.ReportAllocs()
			ctx := context.Background()
			for b.Loop() {
				if resp, _ := h(ctx, ev); len(resp.BatchItemFailures) > 0 {
					b.Fatal("unexpected failures")
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/msg")
		})
	}
}
