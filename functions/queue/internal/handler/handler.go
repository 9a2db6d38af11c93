// Package handler is the queue function's logic: each SQS record is a
// credit (functions/internal/credit) applied once through idem/sqsconsumer.
package handler

import (
	"context"

	"github.com/aws/aws-lambda-go/events"

	"github.com/idemkit/kit/functions/internal/credit"
	"github.com/idemkit/kit/idem"
	"github.com/idemkit/kit/idem/sqsconsumer"
)

// New returns the queue function's batch handler: each record's body is
// parsed with credit.Parse (a malformed body fails the record, and the
// reason is logged) and applied by a (credit.Applier.Effect: its account
// credited, and with a ledger queue the credit announced). Its error is
// sqsconsumer.New's. It is not an sqsconsumer.JSONHandler: the credit's
// rules (a positive whole number of cents that fits in 64 bits, a
// non-empty account) are more than encoding/json checks, and the webhook
// function applies the same ones.
//
// With a.Receipts set, each credit first obtains a receipt (credit.Apply)
// under the kit's lease: a record whose credit is in flight elsewhere is
// failed, to come back after the visibility timeout.
func New(store *idem.Store, a credit.Applier) (func(context.Context, events.SQSEvent) (events.SQSEventResponse, error), error) {
	return sqsconsumer.New(store, func(ctx context.Context, rec events.SQSMessage) (idem.Effect, error) {
		c, err := credit.Parse([]byte(rec.Body))
		if err != nil {
			return idem.Effect{}, err
		}
		return a.Effect(ctx, c)
	}, func(o *sqsconsumer.Options) { o.Key, o.Lease = Key, a.Lease() })
}

// Key is the first of: the message attribute IdempotencyKey, a FIFO
// queue's message group and MessageDeduplicationId
// (sqsconsumer.DeduplicationKey), the body's "id", the record's messageId
// (the original's, for a redriven copy). A body that is no credit fails its
// record with the reason before anything is written, so that bad input
// leaves no claim behind, not even the lease's pending one; the key read
// before it is returned with the error, so that the failure is logged
// under it.
func Key(rec events.SQSMessage) (string, error) {
	k, err := key(rec)
	if err != nil {
		return k, err
	}
	if _, err := credit.Parse([]byte(rec.Body)); err != nil {
		return k, err
	}
	return k, nil
}

var key = sqsconsumer.FirstKey(sqsconsumer.AttributeKey, sqsconsumer.DeduplicationKey, bodyID, sqsconsumer.MessageIDKey)

// bodyID is a credit's "id"; a body that is no credit has none.
func bodyID(rec events.SQSMessage) (string, error) {
	c, err := credit.Parse([]byte(rec.Body))
	if err != nil {
		return "", nil
	}
	return c.ID, nil
}
