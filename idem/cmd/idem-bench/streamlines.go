package main

// The ways a stream is delivered: this kit as the queue function runs it,
// with and without SQS's receive counts, and the floor.

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemkit/kit/idem"
)

// deliverFunc delivers d's message m and waits for its answer.
type deliverFunc func(ctx context.Context, m message, d delivery) error

// streamLine is one way of delivering a stream: this kit with some
// options, or the floor. build makes a new deliverer for each stream, so
// that no stream inherits the share of duplicates another left.
type streamLine struct {
	name  string
	kit   bool
	build func(su setup, processed string) (deliverFunc, error)
}

// kitLine is this kit as the queue function runs it (the SQS adapter,
// per record) over a Store with optFns besides quietStore.
// With counted, each record carries SQS's receive count (a redelivery
// storm's duplicates are its later receives); without, every delivery is
// a first receive, as when the duplicates are a sender's resends (a
// webhook provider's, a relay's).
func kitLine(name string, counted bool, optFns ...func(*idem.Options)) streamLine {
	return streamLine{name: name, kit: true, build: func(su setup, processed string) (deliverFunc, error) {
		store, err := idem.New(su.client, processed, append([]func(*idem.Options){quietStore}, optFns...)...)
		if err != nil {
			return nil, err
		}
		k, err := newSQSKit(store, su.accounts, false)
		if err != nil {
			return nil, err
		}
		return func(ctx context.Context, m message, d delivery) error {
			if counted {
				m.attempt = d.attempt
			}
			return k.deliver(ctx, m, false)
		}, nil
	}}
}

// floorLine costs what the floor does: a first delivery one
// 2-action TransactWriteItems (the claim, unconditional, and the credit),
// a duplicate one GetItem of the claim (eventually consistent, as the
// kit's read), and nothing else: no idempotency code, no condition.
var floorLine = streamLine{name: "floor: one 2-action TransactWriteItems per first delivery, one GetItem per duplicate (no idempotency code)", build: func(su setup, processed string) (deliverFunc, error) {
	return func(ctx context.Context, m message, d delivery) error {
		key := map[string]types.AttributeValue{"pk": s(m.id)}
		if d.dup {
			_, err := su.client.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(processed), Key: key})
			return err
		}
		_, err := su.client.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
			{Put: &types.Put{TableName: aws.String(processed), Item: map[string]types.AttributeValue{"pk": s(m.id), "outcome": s("Processed")}}},
			{Update: creditUpdate(su.accounts, m)},
		}})
		return err
	}, nil
}}

// defaultReadFirstAbove is idem.Options.ReadFirstAbove's default as its
// doc gives it, for the report's names; TestDefaultReadFirstAbove holds
// the library's to it.
const defaultReadFirstAbove = "0.3"

// streamLines are the storm section's lines, this kit's first.
var streamLines = []streamLine{
	kitLine("this kit, default options (ReadFirstAbove "+defaultReadFirstAbove+", no cache), each record with its receive count", true),
	kitLine("this kit, default options, no receive count (every delivery a first receive: a sender's resends)", false),
	kitLine("this kit, ReadFirstAbove -1 (never reads first)", true, func(o *idem.Options) { o.ReadFirstAbove = -1 }),
	floorLine,
}
