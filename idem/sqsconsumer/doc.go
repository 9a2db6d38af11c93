// Package sqsconsumer turns an idem.Store and a record handler into a Lambda
// handler for SQS batches that applies each record's effect once and reports
// exactly the records to retry.
//
// A Handler reads one record and describes its effect; JSONHandler decodes
// the body into a Go value with encoding/json first, and a body that is not
// one JSON value in valid UTF-8, or does not decode, fails that record
// alone, with the decoder's reason logged. For a raw body pass a plain
// Handler:
//
//	type credit struct {
//		Account string `json:"account"`
//		Cents   int64  `json:"cents"`
//	}
//	store, err := idem.New(dynamodb.NewFromConfig(cfg), "processed-ids")
//	…
//	h, err := sqsconsumer.New(store, sqsconsumer.JSONHandler(func(ctx context.Context, c credit, rec events.SQSMessage) (idem.Effect, error) {
//		w, err := idem.Update("accounts", map[string]string{"account": c.Account},
//			expression.Add(expression.Name("balance"), expression.Value(c.Cents)))
//		return idem.Effect{Writes: []types.TransactWriteItem{w}}, err
//	}))
//	if err != nil {
//		log.Fatal(err)
//	}
//	lambda.Start(h)
//
// h is a BatchHandler: a wrapper around it (a log line, a metric) takes and
// returns one, lambda.Start(logged(h)), as the BatchHandler example shows.
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
// without being processed; other groups go on. Each record's
// ApproximateReceiveCount is its idem.Message.Attempt (0 when missing or
// unreadable: only the hint is lost): a redelivery reads its claim
// instead of sending its transaction, and a first receive sends its
// transaction alone, unless the environment settled its key before
// (idem.Options.ReadFirstAbove). Per record only: BatchTransactions and
// Lease read no claim first.
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
//  2. on a FIFO queue, the MessageGroupId and MessageDeduplicationId
//     (DeduplicationKey, "acc-9/evt_101"): a high-throughput FIFO queue
//     deduplicates within a group, so one id in two groups is two
//     messages. Under content-based deduplication the id is the body's
//     SHA-256: equal bodies in one group are one message for the claim's
//     whole retention, not just SQS's 5 minutes;
//  3. the record's messageId. SQS keeps it across redeliveries, but a
//     producer that sends the message again gets a new one, so it dedupes
//     redeliveries only, not re-sends.
//
// A message redriven from the dead-letter queue by the idem command (dlq
// -redrive) is a copy with a messageId of its own and, on FIFO, a
// deduplication id of its own (SQS would drop a resend of the original's
// within 5 minutes); the copy carries the original's in the message
// attributes RedriveMessageIDAttribute and RedriveDeduplicationIDAttribute,
// which MessageIDKey and DeduplicationKey read in place of its own. So the
// copy is keyed as the original was, and a copy of a message that was
// applied meanwhile, or a second copy, is a Duplicate. A KeyFunc of your
// own that keys by rec.MessageId or the deduplication id must read them
// too, or call these functions, for a redrive to be exactly once (what a
// producer can do with them: RedriveMessageIDAttribute's doc).
//
// An IdempotencyKey attribute that is present but not a String, or
// empty, or only white space, fails the record rather than fall back to
// another key. Keys are scoped by the Source (also the metrics'), the
// queue's name by default (below), unless the Store sets a Scope. An SQS key is an opaque id: one holding control or non-ASCII
// characters is applied once like any other, and logged escaped.
//
// Successes: Processed, Duplicate, and a rejection the effect recorded
// (idem.Rejected). Every other outcome is a failure: a key that is missing or
// unreadable, a malformed body the handler refuses (or JSONHandler cannot
// decode), a key reused with another
// payload, a handler error, a panic in the handler, Effect.Rejected or
// Options.Key (an *idem.PanicError: that record fails, the batch goes on), a
// DynamoDB error (one that may follow a commit is an *idem.RetryableError:
// if it did commit, the redelivery is a Duplicate), a conflict that
// outlived its retries, or a record not started because the Lambda deadline
// was within Options.DeadlineMargin (idem.ErrDeadline) or an earlier record
// of its FIFO group failed. Each record is logged and
// counted once, by the Store, including the failures Process never saw; a
// key reused with another payload is logged at WARN with both
// fingerprints. A failure before the claim is logged with the record's
// messageId and, when its key was read, its id and key: a KeyFunc that
// reads the key and then finds the body unusable returns both, and the
// record fails under that key without a claim. With Options.Lease, a record whose lease another delivery
// holds fails too, counted as InFlight, to come back after the visibility
// timeout.
//
// Options are the options every batch consumer takes (idem/batch's
// Options, each default on its field), set in New's optFns. Two defaults
// are this package's own: Options.Key defaults to DefaultKey, and
// Options.Source to the queue's name, the last segment of the record's
// eventSourceARN (QueueName).
//
// Lambda's guide to partial batch responses:
// https://docs.aws.amazon.com/lambda/latest/dg/services-sqs-errorhandling.html
package sqsconsumer
