// Package idem applies each message's effect exactly once: it claims the
// message's id and applies the effect in one DynamoDB TransactWriteItems, so
// both commit or neither does.
//
// A handler describes its effect as DynamoDB writes and performs none
// itself; Put, Update, Delete and ConditionCheck build the writes from Go
// values and the SDK's expression builders:
//
//	store, err := idem.New(dynamodb.NewFromConfig(cfg), "processed-ids")
//	res, err := store.Process(ctx, idem.Message{ID: "evt_001", Source: "credits", Payload: body},
//		func(ctx context.Context, m idem.Message) (idem.Effect, error) {
//			w, err := idem.Update("accounts", map[string]string{"account": "acc-9"},
//				expression.Add(expression.Name("balance"), expression.Value(500)))
//			return idem.Effect{Writes: []types.TransactWriteItem{w}}, err
//		})
//
// The kit prepends a conditional Put of the claim record to the handler's
// writes and sends one transaction. A delivery whose claim loses is a
// Duplicate: nothing is applied and the stored response is returned, at the
// cost of that one call (the old record comes back with the cancellation),
// or of none when Options.CacheSize keeps the claim in a warm environment.
// The same id with another payload (Message.Fingerprint; the payload's
// SHA-256 by default) is a *KeyReuseError; a failed condition on one of the
// handler's writes is a *RejectedError, or the message's recorded outcome
// when Effect.Rejected is set. An error that may follow a commit whose
// answer was lost is a *RetryableError: the retry is then a Duplicate.
//
// Wrap makes a Lambda handler of any event type idempotent (EventBridge,
// SNS, a direct invoke) given a function that reads the event's id; its
// typed response is stored and replayed to duplicates. The adapters in
// idem/sqsconsumer, idem/webhook and idem/stream do the same for SQS
// batches, API Gateway webhooks and DynamoDB or Kinesis streams.
// ProcessBatch commits many messages in as few
// transactions as DynamoDB's limits allow, each message's claim and effect
// always in one of them.
//
// A handler that must call another service before its writes can be
// described (a payment API whose answer the effect stores) runs under
// ProcessLeased: the claim is taken first as a lease with a fencing token,
// the handler forwards the lease's key as the service's idempotency key,
// and the commit applies only while the claim holds the token. While the
// lease is live, other deliveries make no call (*LeaseHeldError).
//
// Messages to other services go in Effect.Messages: each is written as an
// outbox item in the same transaction, under an id that names the claim
// which committed it, and idem/outbox relays it from the table's stream
// to SQS or EventBridge at least once, always under that id, for the next
// consumer to deduplicate.
//
// Claim records expire after Options.RetentionDays; DynamoDB TTL deletes them
// lazily, so the claim treats an expired record that still lingers as absent.
// Retention must exceed every sender's redelivery horizon.
//
// Each delivery is logged once through Options.Logger and told to the
// Options.Observers, such as idem/emf's CloudWatch metrics writer. Tests use
// idem/idemtest for a real DynamoDB-compatible endpoint.
//
// The pattern: https://docs.aws.amazon.com/prescriptive-guidance/latest/cloud-design-patterns/idempotent-consumer.html
package idem
