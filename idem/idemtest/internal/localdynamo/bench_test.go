package localdynamo_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemkit/kit/idem/idemtest"
)

// BenchmarkTransactWriteItems measures one claim + credit transaction on a
// processed-ids table already holding 100 or 10,000 items. On DynamoDB the
// two cost the same; stock moto_server's cost grows with the table.
func BenchmarkTransactWriteItems(b *testing.B) {
	c := idemtest.Client(idemtest.Endpoint(b))
	for _, size := range []int{100, 10_000} {
		b.Run(fmt.Sprintf("items=%d", size), func(b *testing.B) {
			processed := idemtest.CreateTable(b, c, idemtest.Table{Name: "processed", HashKey: "pk"})
			accounts := idemtest.CreateTable(b, c, idemtest.Table{Name: "accounts", HashKey: "account"})
			fill(b, c, processed, size)
			ctx := context.Background()
			b.ResetTimer()
			for i := 0; b.Loop(); i++ {
				in := claimAndCredit(processed, accounts, fmt.Sprintf("bench-%d", i), "acc-1", 1)
				if _, err := c.TransactWriteItems(ctx, in); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func fill(b *testing.B, c *dynamodb.Client, table string, size int) {
	b.Helper()
	for start := 0; start < size; start += 25 {
		var reqs []types.WriteRequest
		for i := start; i < min(start+25, size); i++ {
			reqs = append(reqs, types.WriteRequest{PutRequest: &types.PutRequest{Item: map[string]types.AttributeValue{
				"pk": s(fmt.Sprintf("old-%d", i)), "expiresAt": n(2_000_000_000),
			}}})
		}
		out, err := c.BatchWriteItem(context.Background(), &dynamodb.BatchWriteItemInput{RequestItems: map[string][]types.WriteRequest{table: reqs}})
		if err != nil {
			b.Fatal(err)
		}
		if len(out.UnprocessedItems) > 0 {
			b.Fatalf("unprocessed items: %d", len(out.UnprocessedItems[table]))
		}
	}
}
