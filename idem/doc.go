// Package idem applies each message's effect exactly once: it claims the
// message's id and applies the effect in one DynamoDB TransactWriteItems, so
// both commit or neither does.
//
// A handler describes its effect as DynamoDB writes ([Put], [Update],
// [Delete], [ConditionCheck], built with the SDK's expression package) and
// performs none itself; the Store commits them with a conditional Put of
// the claim:
//
//	store, err := idem.New(dynamodb.NewFromConfig(cfg), "processed-ids")
//	res, err := store.Process(ctx, idem.Message{ID: "evt_001", Source: "credits", Payload: body},
//		func(ctx context.Context, m idem.Message) (idem.Effect, error) {
//			w, err := idem.Update("accounts", map[string]string{"account": "acc-9"},
//				expression.Add(expression.Name("balance"), expression.Value(500)))
//			return idem.Effect{Writes: []types.TransactWriteItem{w}}, err
//		})
//
// A delivery whose claim loses is a Duplicate: nothing is applied and the
// stored response is returned, for that one call, or none from a warm
// environment's cache ([Options.CacheSize]). The same id with another
// payload is a [*KeyReuseError]; a failed condition of the effect a
// [*RejectedError], or the message's recorded outcome when
// [Effect.Rejected] is set. An error that may follow a commit whose answer
// was lost is a [*RetryableError]: the retry is then a Duplicate.
//
// # Where to start
//
//   - Ways in: [Store.Process] for one message, [Store.ProcessBatch] for
//     many in as few transactions as DynamoDB allows, [Wrap] for a Lambda
//     handler of any event type; the adapters idem/sqsconsumer,
//     idem/kafkaconsumer, idem/webhook and idem/stream for SQS, Kafka (MSK
//     and self-managed), API Gateway webhooks and DynamoDB or Kinesis
//     streams.
//   - Keys: [Options.KeyPrefix] + scope + "#" + [Message.ID], the scope
//     being [Options.Scope] or the message's Source; a redelivery is told
//     from a reuse of its id by [Message.Fingerprint].
//   - Outcomes: each delivery ends in one [Outcome], logged once through
//     [Options.Logger] and told to each of [Options.Observers]
//     (idem/emf writes CloudWatch metrics); match errors with errors.Is
//     against the sentinels or errors.As for the typed errors, which carry
//     the key and the stored record.
//   - Retention: claims expire after [Options.RetentionDays], which must
//     exceed every sender's redelivery horizon; an expired claim that TTL
//     has not yet deleted counts as absent.
//   - Calls to other services whose answer the effect needs:
//     [Store.ProcessLeased], a lease with a fencing token ([LeaseOptions]).
//   - Messages to other services: [Effect.Messages], committed as outbox
//     items with the claim and relayed by idem/outbox.
//   - Traces: each delivery is an OpenTelemetry span
//     ([Options.TracerProvider] says when).
//   - Tests: idem/idemtest, against a real DynamoDB-compatible endpoint.
//
// The guide beside this package (GUIDE.md) is the longer read: a
// delivery's way, choosing the retention, the lease's and the outbox's
// contracts, logs, metrics and traces, capacity and cost, a comparison
// with Powertools idempotency, and what is not promised. UPGRADING.md has
// every release's changes.
//
// The pattern: https://docs.aws.amazon.com/prescriptive-guidance/latest/cloud-design-patterns/idempotent-consumer.html
package idem
