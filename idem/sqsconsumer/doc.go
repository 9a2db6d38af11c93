// Package sqsconsumer turns an idem.Store and a record handler into a Lambda
// handler for SQS batches that applies each record's effect once and reports
// exactly the records to retry.
//
//	store, err := idem.New(dynamodb.NewFromConfig(cfg), "processed-ids")
//	lambda.Start(sqsconsumer.New(store, func(ctx context.Context, rec events.SQSMessage) (idem.Effect, error) {
//		return idem.Effect{Writes: []types.TransactWriteItem{credit(rec.Body)}}, nil
//	}))
//
// The event source mapping must set FunctionResponseTypes to
// ReportBatchItemFailures: the handler answers with the failed records'
// messageIds in batchItemFailures and never with a function error, so SQS
// deletes the records that succeeded and redelivers the rest (to the
// dead-letter queue after maxReceiveCount).
//
// Each record is one idem.Store.Process call: its claim and its effect
// commit in one transaction, so two records with the same key, in one batch
// or in two, apply one effect. Records run concurrently, up to
// Options.Concurrency. On a FIFO queue (an eventSourceARN ending in .fifo)
// the records of one MessageGroupId run in order, and after the first
// failure in a group every later record of that group is reported failed
// without being processed; other groups go on.
//
// Options.BatchTransactions trades that concurrency for fewer calls: the
// batch goes through idem.Store.ProcessBatch, which packs the records'
// claims and effects into as few transactions as DynamoDB allows (one call
// for a batch of new records, two when it holds duplicates), each record's
// claim and effect still in one transaction. Records whose effects touch the
// same item, such as two credits to one account, need one transaction each.
// On a FIFO queue a transaction takes at most one record of each message
// group, the groups' next records go in the next one, and a group stops at
// its first failure as above: batching helps a batch of many groups, not a
// batch of one.
//
// A record's key is, by default (DefaultKey), the first of:
//
//  1. the message attribute IdempotencyKey (a String), set by the producer;
//  2. the MessageDeduplicationId of a FIFO queue (under content-based
//     deduplication, the body's SHA-256: equal bodies are one message for
//     the claim's whole retention, not just SQS's 5 minutes);
//  3. the record's messageId. SQS keeps it across redeliveries, but a
//     producer that sends the message again gets a new one, so it dedupes
//     redeliveries only, not re-sends.
//
// Keys are scoped by the queue's name unless the Store sets a Scope.
//
// Successes: Processed, Duplicate, and a rejection the effect recorded
// (idem.Rejected). Every other outcome is a failure: a key that is missing or
// unreadable, a malformed body the handler refuses, a key reused with another
// payload, a handler error or panic, a DynamoDB error, a conflict that
// outlived its retries, or a record not started because the Lambda deadline
// was within Options.DeadlineMargin. Each record is logged and counted once,
// by the Store: in Process, or through Store.ReportFailure for the failures
// Process never saw.
//
// Lambda's guide to partial batch responses:
// https://docs.aws.amazon.com/lambda/latest/dg/services-sqs-errorhandling.html
package sqsconsumer
