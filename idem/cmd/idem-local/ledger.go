package main

// The demo's last word: the ledger the outbox chain wrote.

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemkit/kit/idem/cmd/internal/localstack"
)

// ledgerTable is the table keyed by "entry" (LedgerTable), or nil.
func ledgerTable(s *localstack.Stack) *localstack.Table {
	for _, id := range sortedKeys(s.Tables) {
		t := s.Tables[id]
		for _, k := range t.Input.KeySchema {
			if aws.ToString(k.AttributeName) == "entry" && k.KeyType == ddbtypes.KeyTypeHash {
				return t
			}
		}
	}
	return nil
}

// ledgerLine waits for the chain (stream → relay → queue → ledger) to
// write one entry per credit applied, then prints the count and what the
// stream pollers did, and reports whether the count is right.
func ledgerLine(ctx context.Context, w io.Writer, s *localstack.Stack, table string, before, applied int) bool {
	fmt.Fprintf(w, "demo: waiting for the ledger (the outbox through the stream, the relay and its queue)…\n")
	deadline := time.Now().Add(90 * time.Second)
	got, err := 0, error(nil)
	for {
		got, err = countItems(ctx, s.DynamoDB(), table)
		if err != nil || got-before >= applied || time.Now().After(deadline) || ctx.Err() != nil {
			break
		}
		time.Sleep(300 * time.Millisecond)
	}
	// Duplicates would come after: let the queues the chain feeds drain.
	for _, p := range s.Pollers {
		if p != entryPoller(s) {
			_ = drain(ctx, s.SQS(), p.Queue.URL, 10*time.Second)
		}
	}
	if err == nil {
		got, err = countItems(ctx, s.DynamoDB(), table)
	}
	if err != nil {
		fmt.Fprintf(w, "demo: ledger %s: %v\n", table, err)
		return false
	}
	for _, p := range s.StreamPollers {
		st := p.Stats()
		fmt.Fprintf(w, "demo: %s read %s's stream: %d record(s) in %d invoke(s), %d filtered out, %d retried invoke(s), %d sent on failure\n",
			p.Source.Function, p.Table.Name, st.Records, st.Invokes, st.Filtered, st.Retries, st.OnFailure)
	}
	mark := "ok"
	if got-before != applied {
		mark = "MISMATCH"
	}
	fmt.Fprintf(w, "demo: ledger: %d new entries for %d credits in %s (%d before)  %s\n", got-before, applied, table, before, mark)
	return got-before == applied
}

// countItems counts a table's items.
func countItems(ctx context.Context, client *dynamodb.Client, table string) (int, error) {
	n := 0
	p := dynamodb.NewScanPaginator(client, &dynamodb.ScanInput{TableName: aws.String(table), Select: ddbtypes.SelectCount})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return n, err
		}
		n += int(page.Count)
	}
	return n, nil
}
