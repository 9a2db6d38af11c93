package main

// The ways a stream is delivered: this kit as the stream says it
// receives it (the SQS adapter with or without receive counts, or
// Store.Process directly), the Go two-phase lock, and the floor.

import (
	"context"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemkit/kit/idem"
)

// deliverFunc delivers d's message m and waits for its answer.
type deliverFunc func(ctx context.Context, m message, d delivery) error

// streamLine is one way of delivering a stream: this kit with some
// options, the two-phase lock, or the floor. build makes a new deliverer
// for each stream, so that no stream inherits the share of duplicates
// another left; via is how the stream says this kit receives it.
type streamLine struct {
	name  string
	kit   bool
	build func(su setup, processed string, v via) (deliverFunc, error)
}

// kitLine is this kit over a Store with optFns besides quietStore,
// receiving each stream as its via says: the SQS adapter per record, as
// the queue function runs it, with the record's receive count or none;
// or Store.Process called directly with no Attempt.
func kitLine(name string, optFns ...func(*idem.Options)) streamLine {
	return streamLine{name: name, kit: true, build: func(su setup, processed string, v via) (deliverFunc, error) {
		opts := append([]func(*idem.Options){quietStore}, optFns...)
		if su.outcomes != nil {
			opts = append(opts, su.outcomes.Option)
		}
		store, err := idem.New(su.client, processed, opts...)
		if err != nil {
			return nil, err
		}
		if v == viaProcess {
			return processDeliverer(store, su.accounts), nil
		}
		k, err := newSQSKit(store, su.accounts, false)
		if err != nil {
			return nil, err
		}
		return func(ctx context.Context, m message, d delivery) error {
			if v == viaSQSCounted {
				m.attempt = d.attempt
			}
			return k.deliver(ctx, m, false)
		}, nil
	}}
}

// acrossEnvironments is l with each message's deliveries spread over
// envs environments, each delivery to the next, so that no duplicate
// reaches an environment that saw its key settled: the Store's share of
// duplicates among deliveries new to it (ReadFirstAbove) alone decides.
func acrossEnvironments(l streamLine, envs int) streamLine {
	return streamLine{name: l.name, kit: l.kit, build: func(su setup, processed string, v via) (deliverFunc, error) {
		ds := make([]deliverFunc, envs)
		for i := range ds {
			d, err := l.build(su, processed, v)
			if err != nil {
				return nil, err
			}
			ds[i] = d
		}
		return func(ctx context.Context, m message, d delivery) error {
			return ds[(d.msg+d.attempt-1)%envs](ctx, m, d)
		}, nil
	}}
}

// processDeliverer calls store.Process with the message's credit, as a
// user's own code calls the core: no Attempt, the sender named once.
func processDeliverer(store *idem.Store, accounts string) deliverFunc {
	return func(ctx context.Context, m message, _ delivery) error {
		h := func(context.Context, idem.Message) (idem.Effect, error) {
			return idem.Effect{Writes: []types.TransactWriteItem{{Update: creditUpdate(accounts, m)}}, Response: []byte("ok")}, nil
		}
		res, err := store.Process(ctx, idem.Message{ID: m.id, Source: "bench", Payload: []byte(m.account)}, h)
		if err != nil {
			return err
		}
		if res.Outcome != idem.Processed && res.Outcome != idem.Duplicate {
			return fmt.Errorf("outcome %v", res.Outcome)
		}
		return nil
	}
}

// twoPhaseLine is the Go two-phase lock (strategies.go: a conditional
// PutItem IN_PROGRESS, the credit, an UpdateItem COMPLETED), the
// lock-then-complete algorithm of Powertools and its Go port. It counts
// no deliveries, so every stream reaches it alike.
var twoPhaseLine = streamLine{name: "Go two-phase lock (conditional PutItem, credit, UpdateItem: Powertools' algorithm)", build: func(su setup, processed string, _ via) (deliverFunc, error) {
	tp := &twoPhase{c: su.client, processed: processed, accounts: su.accounts, now: time.Now}
	return func(ctx context.Context, m message, _ delivery) error { return tp.deliver(ctx, m, false) }, nil
}}

// floorLine costs what the floor does: a first delivery one
// 2-action TransactWriteItems (the claim, unconditional, and the credit),
// a duplicate one GetItem of the claim (eventually consistent, as the
// kit's read), and nothing else: no idempotency code, no condition.
var floorLine = streamLine{name: "floor: one 2-action TransactWriteItems per first delivery, one GetItem per duplicate (no idempotency code)", build: func(su setup, processed string, _ via) (deliverFunc, error) {
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

// The storm section's lines, in the report's order: this kit with its
// defaults first, the Go two-phase lock, the floor last.
const (
	lineKit = iota
	lineKitNoRead
	lineTwoPhase
	lineFloor
)

var streamLines = []streamLine{
	lineKit:       kitLine("this kit, default options (ReadFirstAbove " + defaultReadFirstAbove + ", no cache)"),
	lineKitNoRead: kitLine("this kit, ReadFirstAbove -1 (never reads)", func(o *idem.Options) { o.ReadFirstAbove = -1 }),
	lineTwoPhase:  twoPhaseLine,
	lineFloor:     floorLine,
}
