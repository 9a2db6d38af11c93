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
// their records.
package outbox
