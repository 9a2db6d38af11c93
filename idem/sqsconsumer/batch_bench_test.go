package sqsconsumer_test

import (
	"context"
	"fmt"
	"log/slog"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemkit/kit/idem"
	"github.com/idemkit/kit/idem/sqsconsumer"
)

// BenchmarkSQSAdapterBatchTransactions is BenchmarkSQSAdapter's batch of
// 10 in batch mode: one transaction for the whole batch, each record
// crediting its own account.
func BenchmarkSQSAdapterBatchTransactions(b *testing.B) {
	store, err := idem.New(acceptAll{}, "processed", func(o *idem.Options) {
		o.Logger = slog.New(slog.DiscardHandler)
	})
	if err != nil {
		b.Fatal(err)
	}
	const n = 10
	ev := events.SQSEvent{}
	writes := map[string]types.TransactWriteItem{} // built once, as BenchmarkSQSAdapter's one write is
	for i := range n {
		id := fmt.Sprint("m", i)
		ev.Records = append(ev.Records, record(id, `{"id":"evt_001","account":"acc-9","cents":500}`))
		writes[id] = credit("accounts", "acc-"+id, 500)
	}
	h := newHandler(b, store, func(_ context.Context, rec events.SQSMessage) (idem.Effect, error) {
		return idem.Effect{Writes: []types.TransactWriteItem{writes[rec.MessageId]}}, nil
	}, func(o *sqsconsumer.Options) { o.BatchTransactions = true })
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
