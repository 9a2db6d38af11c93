// Package outbox relays the messages an effect sends (idem.Effect.Messages)
// from the outbox table's DynamoDB stream to their destinations, at least
// once: SQS queues, standard and FIFO, with SendMessageBatch, and
// EventBridge buses with PutEvents.
//
// The kit writes each outgoing message as an outbox item in the same
// transaction as its claim and effect, so a message exists exactly when
// its effect was applied. The relay, a Lambda function on the table's
// stream, sends each new item and answers Lambda with the first record it
// could not send (ReportBatchItemFailures), so Lambda retries from there;
// a message may so be sent more than once, always under the same id, for
// the consumer at the other end to deduplicate on:
//
//   - SQS: the message attribute IdempotencyKey, which idem/sqsconsumer
//     reads first, plus MessageDeduplicationId and a stable
//     MessageGroupId on a FIFO queue;
//   - EventBridge: the detail's "idempotencyKey" field.
//
// A batch's items go out in calls of consecutive items bound for one
// destination (up to 10 entries, 256 KiB), up to Options.Concurrency calls
// at once. The answer is exact all the same: it names the first record, in
// stream order, that was not sent, and every record before it was sent.
// Records after it may have been sent too, by calls in flight when an
// earlier one failed; no call starts once a failure before it is known.
// Lambda retries from the record named, so those are sent again, under
// the same ids.
//
// Order is kept for a FIFO queue's message group within one batch: its
// items go out in stream order, one call at a time, and none after a call
// for the group failed, so a later message of the group cannot overtake an
// earlier one on the retry. Nothing more is promised. Standard queues and
// EventBridge have no order to keep, and their calls go out in any order.
// Each outbox item is its own stream item, ordered only against itself, so
// two items of one group may reach the relay in different batches or
// shards, in either order. And within one call SQS may refuse an entry and
// take the ones after it, which then arrive before the refused one's resend
// (idem.OutgoingMessage.GroupID: give a consumer that needs order a
// sequence in the body).
//
// Wiring, in a function's main:
//
//	relay, err := outbox.New(func(o *outbox.Options) {
//		o.SQS = sqs.NewFromConfig(cfg)
//	})
//	if err != nil {
//		log.Fatal(err)
//	}
//	lambda.Start(relay.Handle)
//
// The event source mapping sets FunctionResponseTypes to
// ReportBatchItemFailures, an on-failure destination for records that
// exhaust their retries, and, when the outbox shares the processed-ids
// table (idem.Options.OutboxTable's default), FilterCriteria that pass
// only outbox items ([FilterPattern]). Items expire by TTL after
// idem.Options.OutboxRetention, by which time the stream has dropped
// their records. The reference template (template.yaml) wires all of it:
// the processed-ids table's stream, RelayFunction with a role of its own
// (read on that one stream, send on the ledger queue and the on-failure
// queue only), alarms on the relay's iterator age and errors, and
// LedgerFunction, an idem/sqsconsumer consumer writing one ledger item per
// message.
package outbox
