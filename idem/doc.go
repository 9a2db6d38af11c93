// Package idem applies each message's effect exactly once: it claims the
// message's id and applies the effect in one DynamoDB TransactWriteItems, so
// both commit or neither does.
//
// A handler describes its effect as DynamoDB writes and performs none itself:
//
//	store, err := idem.New(dynamodb.NewFromConfig(cfg), "processed-ids")
//	res, err := store.Process(ctx, idem.Message{ID: "evt_001", Source: "credits", Payload: body},
//		func(ctx context.Context, m idem.Message) (idem.Effect, error) {
//			return idem.Effect{Writes: []types.TransactWriteItem{{Update: credit}}}, nil
//		})
//
// The kit prepends a conditional Put of the claim record to the handler's
// writes and sends one transaction. A delivery whose claim loses is a
// Duplicate: nothing is applied and the stored response is returned, at the
// cost of that one call (the old record comes back with the cancellation).
// The same id with a different payload is a *KeyReuseError; a failed
// condition on one of the handler's writes is a *RejectedError, or the
// message's recorded outcome when Effect.Rejected is set.
//
// ProcessBatch does the same for a batch of messages in as few
// transactions as DynamoDB's limits allow, each message's claim and effect
// always in one of them, with the same outcome per message as Process.
//
// Claim records expire after Options.RetentionDays; DynamoDB TTL deletes them
// lazily, so the claim treats an expired record that still lingers as absent.
// Retention must exceed every sender's redelivery horizon.
//
// The adapters in idem/sqsconsumer and idem/webhook turn a Store into a
// Lambda handler for SQS batches and API Gateway webhooks; idem/idemtest
// gives tests a real DynamoDB-compatible endpoint.
//
// The pattern: https://docs.aws.amazon.com/prescriptive-guidance/latest/cloud-design-patterns/idempotent-consumer.html
package idem
