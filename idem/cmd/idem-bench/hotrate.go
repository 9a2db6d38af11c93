package main

// The local server's own rate, measured before the hot-item runs: it
// serves one request at a time, so past some rate it, not the model, sets
// a run's pace, and the report says when it did.

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemkit/kit/idem/idemtest"
)

// rateClients is how many clients at once measure the local server's rate.
const rateClients = 16

// localRate is what the local server served a second, straight (no
// proxy), rateClients at once: single-item writes, and 2-action
// transactions.
type localRate struct{ singles, txs float64 }

// measureLocalRate times each kind for about d.
func measureLocalRate(ctx context.Context, endpoint string, d time.Duration) (localRate, error) {
	c := idemtest.Client(endpoint)
	table, err := idemtest.CreateTableContext(ctx, c, idemtest.Table{Name: "bench-hot-rate", HashKey: "pk"})
	if err != nil {
		return localRate{}, err
	}
	var r localRate
	if r.singles, err = rateOf(ctx, d, func(ctx context.Context, i int64) error {
		_, err := c.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(table), Item: map[string]types.AttributeValue{"pk": s(fmt.Sprint("s-", i))}})
		return err
	}); err != nil {
		return r, err
	}
	r.txs, err = rateOf(ctx, d, func(ctx context.Context, i int64) error {
		_, err := c.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
			{Put: &types.Put{TableName: aws.String(table), Item: map[string]types.AttributeValue{"pk": s(fmt.Sprint("t-", i))}}},
			{Update: &types.Update{TableName: aws.String(table), Key: map[string]types.AttributeValue{"pk": s(fmt.Sprint("acc-", i%rateClients))},
				UpdateExpression: aws.String("ADD balance :c"), ExpressionAttributeValues: map[string]types.AttributeValue{":c": n(1)}}},
		}})
		return err
	})
	return r, err
}

// rateOf is how many calls of f a second rateClients clients complete in
// about d.
func rateOf(ctx context.Context, d time.Duration, f func(context.Context, int64) error) (float64, error) {
	var (
		next, done atomic.Int64
		wg         sync.WaitGroup
		mu         sync.Mutex
		first      error
	)
	start := time.Now()
	stop := start.Add(d)
	for range rateClients {
		wg.Go(func() {
			for time.Now().Before(stop) {
				if err := f(ctx, next.Add(1)); err != nil {
					mu.Lock()
					first = err
					mu.Unlock()
					return
				}
				done.Add(1)
			}
		})
	}
	wg.Wait()
	return float64(done.Load()) / time.Since(start).Seconds(), first
}

// load is the share of the local server's measured rate a run used: the
// requests the model forwarded to it, each kind against its own rate.
func (r localRate) load(t proxyTally, wall time.Duration) float64 {
	if r.singles <= 0 || r.txs <= 0 || wall <= 0 {
		return 0
	}
	var singles, txs float64
	for op, n := range t.forwarded {
		if op == "TransactWriteItems" {
			txs += float64(n)
		} else {
			singles += float64(n)
		}
	}
	return (singles/r.singles + txs/r.txs) / wall.Seconds()
}
