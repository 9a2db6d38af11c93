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
//
// # A delivery's way
//
//	sender                         your function                     DynamoDB
//	delivery #1 of evt_001  ────▶  handler describes the effect
//	                               idem: one TransactWriteItems ──▶  Put claim credits#evt_001, if absent or expired
//	                                                                 Update accounts acc-9 ADD balance 500
//	                                                                 ── both commit ──
//	        ◀── the handler's answer, stored with the claim
//
//	delivery #2 of evt_001  ────▶  the same transaction ──────────▶  the claim's condition fails: all cancelled,
//	(retry, redrive, replay)                                         the old claim returned (ALL_OLD)
//	        ◀── the first answer, replayed; nothing applied
//
//	evt_001, another payload ───▶  the same transaction ──────────▶  cancelled; the old claim's fingerprint differs:
//	        ◀── KeyReuse: refused (a 422, a failed record)
//
// # Effects
//
// A handler runs for every delivery, and the claim decides which one
// commits, so it describes its writes and performs none. [Put], [Update],
// [Delete] and [ConditionCheck] marshal Go values with the SDK's
// attributevalue package (dynamodbav tags honoured) and take the SDK's
// expression builders, with an optional condition:
//
//	w, err := idem.Update(accounts, map[string]string{"account": "acc-9"},
//		expression.Add(expression.Name("balance"), expression.Value(-500)),
//		expression.Name("balance").GreaterThanEqual(expression.Value(500))) // refuse an overdraft
//
// An effect is what one transaction can hold beside its claim: at most 99
// writes, none two on one item, about 4 MB in all, in one account and
// Region, its outgoing messages counted among them. One DynamoDB would
// refuse is an [*InvalidError] before anything is sent.
//
// A failed condition is a [*RejectedError], and nothing commits: the
// delivery fails and its sender retries. [RejectedError.Decode] reads the
// item as it was, when the write asked for it
// (ReturnValuesOnConditionCheckFailure ALL_OLD). A rejection that is the
// message's answer, not a fault (an overdraft refused), is recorded with
// [Effect.Rejected]: the claim commits without the effect and the bytes it
// returns are the stored response, so redeliveries replay it instead of
// retrying for ever (the Effect example shows one).
//
// # Keys, scopes and fingerprints
//
// The claim key is [Options.KeyPrefix] + scope + "#" + [Message.ID]. The
// scope is [Options.Scope], else the message's Source (the queue's name,
// the webhook's route, the function's name; each adapter says), so two
// senders may use the same ids. A scope holds no "#", so no two (scope, id)
// pairs share a key. The id is one the sender keeps across its retries:
// the adapters document which they read.
//
// What tells a redelivery from a reuse of its id is the payload's
// fingerprint ([Message.Fingerprint]): the SHA-256 of the payload by
// default, right for ids a client chose; the event's stable identity where
// a provider renders each retry afresh (Stripe's and GitHub's presets in
// idem/webhook, an EventBridge event in [Wrap]). A duplicate whose bytes
// differ but whose fingerprint matches is a Duplicate, logged with both
// payloads' digests.
//
// # Outcomes and errors
//
// Each delivery ends in one [Outcome], logged once and told once to each
// Observer, also the name of its metric:
//
//   - Processed: the claim and the effect committed.
//   - Duplicate: claimed before; nothing applied, the stored response
//     returned.
//   - Rejected: a condition failed and [Effect.Rejected] recorded it.
//   - KeyReuse: claimed before for another payload ([*KeyReuseError]).
//   - Failed: nothing committed; retry the delivery (the errors below).
//   - Refused: turned away before its claim, the sender's fault (a webhook
//     without a valid signature), counted apart from Failed.
//   - InFlight: another delivery holds the message's lease
//     ([*LeaseHeldError]); nothing done.
//   - Fenced: the delivery's lease was taken over before its commit
//     ([*FencedError]); nothing applied.
//
// A failure before the commit (a handler error, a panic, a timeout,
// throttling that outlived [Options.MaxAttempts]) commits nothing, so the
// retry is a first delivery again; a failure after it leaves the claim and
// the effect both committed, so the retry is a Duplicate. There is no state
// in between. An error that may follow a commit whose answer was lost (a
// reset, a timeout, a response cut short) is a [*RetryableError], never
// "nothing committed": its retry finds the claim.
//
// A panic in any callback the kit runs (a handler, Effect.Rejected,
// Message.Replay, an adapter's key, fingerprint or verifier function) is
// a [*PanicError]: that delivery fails with nothing committed, counted once
// as Failed, and the batch and the process go on. Match errors with
// errors.Is against the sentinels (ErrKeyReuse, ErrRejected, ErrRetryable,
// ErrInvalid, ErrDeadline, ErrLeaseHeld, ErrFenced) or errors.As for the
// typed errors, which carry the key and the stored record.
//
// # Options
//
// [Options] holds the Store's settings, each field's default on its doc:
// the claim record's attribute names and sort key (a single-table design
// sets a KeyPrefix), the scope, the retention, the largest stored response,
// the retries of conflicts and throttling (MaxAttempts, BackoffBase,
// BackoffMax: full jitter), the cache, the logger and observers, and the
// outbox's table and retention. The adapters add their own:
// sqsconsumer.Options, webhook.Options, [WrapOptions], stream.Options and
// ClaimedOptions, outbox.Options; a lease has [LeaseOptions].
//
// # Choosing the retention window
//
// A claim must outlive every redelivery of its message, or the late copy
// is a first delivery again. Take the longest of:
//
//   - the queue's MessageRetentionPeriod (SQS: 4 days by default, at most
//     14), and, if you ever redrive a dead-letter queue back, the
//     dead-letter queue's: a redriven message is a redelivery;
//   - the sender's retry horizon: Stripe retries for 3 days, GitHub
//     redeliveries are manual within 3 days, your own clients' policy;
//   - how long after an incident you might replay events by hand.
//
// Then add a margin of whole days. The kit ignores an expired claim
// itself, so the window is exactly [Options.RetentionDays]; TTL deletion,
// free but lazy (typically within a few days of expiry), only frees the
// storage. Storage is the price of a longer window: one claim item (about
// 200 bytes plus the stored response) per distinct message for the whole
// window. The reference template's RetentionDays parameter defaults to 30
// and refuses less than 15, longer than its dead-letter queue's 14 days.
//
// # Duplicates without a call: the cache
//
// With [Options.CacheSize] set, a Store keeps the claims it committed or
// was shown, least recently used out first. A redelivery to the same warm
// environment is then answered from memory, a Duplicate or a key reuse as
// the claim's condition would answer, with no DynamoDB call; a cached claim
// is used only until it expires. It is off by default because a claim
// record deleted by hand, to have its message run again, is still answered
// from a warm environment's cache until it would have expired. The
// reference functions keep 1,000 claims.
//
// # Calls to other services: the lease
//
// Some effects need another service's answer before their writes can be
// described: a payout created at a payment API whose id must be stored, a
// Step Functions execution started, a receipt issued. Such handlers run
// under a lease: [Store.ProcessLeased], or the Lease option of the
// adapters (sqsconsumer.Options, webhook.Options, [WrapOptions]).
//
//	credits, err := webhook.New(store, handler, func(o *webhook.Options) {
//		o.Lease = &idem.LeaseOptions{} // the defaults: see LeaseOptions
//	})
//
//	// in the handler:
//	lease, _ := idem.LeaseFromContext(ctx)
//	req.Header.Set("Idempotency-Key", lease.Key) // lease.StepKey("payout") for one of several calls
//
// The claim is written first, alone, as pending (one UpdateItem): a lease
// that ends after [LeaseOptions.Duration], or Reserve before the context's
// deadline when that comes first, and a fencing token that grows with each
// new lease of the key. The handler runs with the lease in its context,
// and its context ends with the lease; it calls out with [Lease.Key], the
// claim key, the same for every delivery of the message. One transaction
// then commits its writes, its response and pending → processed, on the
// condition that the claim still holds this delivery's token.
//
// While a lease is live, a redelivery makes no call: the SQS adapter fails
// that record (it comes back after the visibility timeout), the webhook
// adapter answers 409 with Retry-After set to the lease's remaining
// seconds (the IETF idempotency-key draft's answer for a request in
// flight), Wrap returns the retryable [*LeaseHeldError]; all are counted as
// InFlight, not Failed. A handler error or panic releases the lease, so
// the redelivery runs at once. A crash or a timeout leaves the lease to
// end; a second after its end (room for the environments' clocks to
// disagree) the next delivery takes a new lease and token and calls again
// with the same key, which the remote service answers as the first call.
// If the late original still reaches its commit, its fencing condition
// fails: it applies nothing and returns a [*FencedError] (logged at WARN,
// counted as Fenced; its retry finds the Duplicate).
//
// The contract: the kit guarantees one effect in DynamoDB and at most one
// call in flight per key while a lease is live; the remote service must
// make the repeated call harmless by honouring the key for longer than the
// lease and every retry around it. [LeaseOptions.KeyLifetime] says how
// long that is: the kit takes no new lease that would end more than that
// after the message was first claimed, and fails the delivery with a
// [*StaleLeaseError] for someone to check rather than call where the
// service may have forgotten the key. KeyLifetime must exceed Duration, and
// RetentionDays both together; the adapters' constructors, Wrap and
// ProcessLeased refuse them otherwise. A pending claim stays pending until
// RetentionDays have passed; once expired it is absent, and a message under
// its key is processed. Process and ProcessBatch, which call nothing out,
// meet a live lease as held and commit over an ended one, in a second
// transaction conditioned on that pending claim. Each lease carries a
// random id besides its token, which its release and its commit name, so
// neither touches another delivery's lease.
//
// Two repeated calls can still be in flight together once no lease holds
// them: a handler whose call timed out on its side while the service still
// works releases its lease, and the redelivery calls at once; a handler
// that ignores its context keeps calling after its lease ends. Both are
// harmless to a service that answers a concurrent request with the same key
// as Stripe does (409, retry) or serializes them; give the call a timeout
// shorter than the lease, and honour the context.
//
// What to forward, and the KeyLifetime that goes with it:
//
//   - Stripe's API: the Idempotency-Key header, kept 24 hours: the defaults.
//   - Step Functions StartExecution (standard workflows): the execution name
//     (at most 80 characters: a hash of Lease.Key), unique for 90 days;
//     ExecutionAlreadyExists with the same input means it was started.
//     KeyLifetime of 90 days, RetentionDays above 90.
//   - SQS FIFO SendMessage: the MessageDeduplicationId (at most 128
//     characters), kept 5 minutes: KeyLifetime of 5 minutes, Duration
//     under it.
//   - Your own API: whatever it deduplicates, for as long as it does.
//   - Email APIs and EventBridge PutEvents honour no key: a crash after the
//     call sends again. Not a lease's job: put the message in
//     Effect.Messages (the outbox, below).
//
// Costs: a first delivery is 2 calls (the lease's UpdateItem, 1 write unit
// for a claim under 1 KB; then the commit, 2 write units per KB of each
// item) against 1 call in one-transaction mode; a handler failure adds the
// release (1 call); taking over a crashed delivery's lease adds 1. A
// duplicate is 1 call either way (the lease's condition fails and returns
// the stored record), or none from the cache. idem-bench (make bench)
// measures both modes side by side.
//
// # Messages to other services: the outbox
//
// An effect often includes telling someone else: a credit applied is
// announced to a ledger, a billing service, an event bus. Publishing from
// the handler would happen outside the transaction (a crash after the
// publish and before the commit publishes twice; a publish that fails after
// the commit is lost), so the message goes in the effect:
//
//	return idem.Effect{
//		Writes: []types.TransactWriteItem{w},
//		Messages: []idem.OutgoingMessage{{
//			Destination: ledgerQueueURL, // or "eventbridge:" + a bus's name or ARN
//			Type:        "credit.applied",
//			Body:        string(body),
//		}},
//	}, nil
//
// Each message becomes an outbox item in [Options.OutboxTable] (the
// processed-ids table by default), written in the same transaction as the
// claim and the writes and counted in its limits; a bad destination or body
// is an [*InvalidError] before anything is sent. Its id names the claim that
// committed it (the table, the claim key, the claim's time) and its index,
// so it is sent under that id every time, and a message claimed again after
// its claim expired sends under new ids. A Duplicate and a recorded
// rejection send nothing. One outgoing message adds no call to the
// delivery and, by DynamoDB's pricing, 2 write units for an item under 1 KB.
//
// A relay on the table's stream ([github.com/idemkit/kit/idem/outbox])
// delivers each item at least once, carrying the id where the kit's
// consumers look for a key: the SQS message attribute IdempotencyKey, the
// EventBridge detail's "idempotencyKey" field. The next consumer (the SQS
// adapter, or Wrap keyed on that field) applies it once, so a chain of
// functions has exactly-once effects end to end. Items expire by TTL after
// [Options.OutboxRetention], past the stream's 24 hours.
//
// # Logs and metrics
//
// Each delivery is logged once through [Options.Logger] (slog), with the
// outcome, the id, the source, the key and, from the adapters, such things
// as the SQS messageId; its level is on the field's doc. In Lambda,
// aws-lambda-go's lambdacontext.NewLogger writes Lambda's JSON (timestamp,
// level, message, requestId) under the function's LogFormat JSON and honours
// AWS_LAMBDA_LOG_LEVEL. Each delivery is also told once to each of
// [Options.Observers]; [github.com/idemkit/kit/idem/emf] is one, a CloudWatch
// Embedded Metric Format line per outcome with the Source as its dimension,
// for alarms:
//
//	metrics, err := emf.New(os.Stdout)
//	store, err := idem.New(client, table, func(o *idem.Options) {
//		o.Logger = lambdacontext.NewLogger()
//		o.Observers = []idem.Observer{metrics}
//	})
//
// A Source that CloudWatch would drop as a dimension (blank, over 1,024
// characters, not printable ASCII) is refused before anything is written,
// so every outcome can be counted. An empty Source is a Store's own calls'
// (scope "default", counted as "unknown"); the adapters name one from the
// event and refuse an event that names none.
//
// # Traces
//
// Each delivery is an OpenTelemetry span, named as the semantic
// conventions name its kind: "process <queue>" for an SQS message,
// "METHOD path" for a webhook, "process <table>" for a stream record,
// "process <source>" otherwise. It carries the outcome (idem.outcome),
// whether the cache or a coalesced delivery answered (idem.cached), the
// transaction attempts (idem.attempts), the lease's token and the claim
// key hashed (idem.key.sha256, 16 hex digits: a key may be personal data,
// so it is never in clear); the FaaS attributes when the context is
// Lambda's. Each DynamoDB call is a child span named as OpenTelemetry
// names an AWS SDK call (DynamoDB.TransactWriteItems, DynamoDB.UpdateItem,
// DynamoDB.GetItem); a batch's transaction links the spans of its
// messages. A message that carries a trace continues it: the SQS adapter
// reads the AWSTraceHeader system attribute or a "traceparent" message
// attribute, the webhook Receiver the traceparent header.
//
// The trace crosses the outbox: a delivery stores its trace context with
// its claim and each outgoing message, the relay's "send <queue>" span is
// its child and sets the send's AWSTraceHeader, and the SQS consumer's
// span continues it, so one credit's trace runs from the webhook through
// the commit and the relay to the ledger. To EventBridge the relay passes
// it as PutEvents' TraceHeader, which X-Ray follows; the event a target
// receives does not carry it, so a Wrap consumer begins a trace of its
// own. Errors are named on spans by type (error.type), never by message,
// and a delivery made inside a handler is a child of the handler's.
//
// The kit depends on the OpenTelemetry API alone, not an SDK. Spans go to
// [Options.TracerProvider] when one is set, for every delivery. Left nil,
// the kit uses OpenTelemetry's global provider for a delivery whose
// context carries a recording span, such as the invoke's span that
// otellambda's handler wrapper starts, and starts no span at all
// otherwise, so that tracing costs nothing until a program traces its
// invokes (make bench states the figures with and without). The
// reference functions (functions/internal/telemetry) install the
// OpenTelemetry SDK and its OTLP/HTTP exporter when the standard
// OTEL_EXPORTER_OTLP_ENDPOINT names a collector (the ADOT layer's, on
// AWS), and start each invoke's span as otellambda does; make local
// receives their spans and shows each trace.
//
// # Capacity and cost
//
//   - Writes per message: a transactional write costs 2 write request
//     units per KB of each item, so a claim under 1 KB with a 1-KB effect
//     is 4 units in one round trip. A lock-then-complete design
//     (Powertools) is 3 units (put, business write, update) in three round
//     trips, more when the stored response is large: one unit more per
//     message buys the absence of a window in which the effect and the
//     record disagree.
//   - Calls per message: 1, or about a tenth of one with the SQS adapter's
//     BatchTransactions (a batch of 10 new records in one transaction); 2
//     when a read comes first (Options.ReadFirstAbove) and finds nothing.
//   - Duplicates: one cancelled transaction each (2 to 4 write units: AWS
//     does not document a cancelled one's), or one eventually consistent
//     read (0.5 read unit for a claim up to 4 KB) once a sender's recent duplicates pass
//     Options.ReadFirstAbove, or nothing when a warm environment's cache
//     knows the claim. When the sender counts its deliveries
//     (Message.Attempt: SQS's receive count) first receives and
//     redeliveries keep their shares apart, so that in a redelivery storm
//     only the redeliveries read first. Check the cost on your bill with
//     ReturnConsumedCapacity rather than trust a figure here.
//   - Partitions: claim keys are scope#id with ids that senders make
//     unique, so claims spread evenly; no hot key unless one id is
//     redelivered in a storm, one conditional write each. Contention lives
//     in the effect's items (one account's balance): many credits to one
//     account conflict, and the kit retries TransactionConflict with
//     jittered backoff.
//   - TTL deletes are free and consume no write capacity.
//   - Global tables: claim in one Region only. Transactions are atomic only
//     in the Region that commits them and replication resolves conflicts by
//     last writer wins, so one message delivered in two Regions of an
//     active-active table is applied in both.
//
// # Compared with Powertools idempotency
//
// Powertools for AWS Lambda (Python, TypeScript, Java, .NET; there is no
// official Powertools for Go) locks, then completes: a conditional PutItem
// of an INPROGRESS record, the handler, then an UpdateItem to COMPLETED
// with the response, or a DeleteItem on error. Its record is not in a
// transaction with the handler's own writes. idem-bench runs the real
// Powertools for TypeScript package with a credit handler written as its
// users write it, on the same local DynamoDB and in the same run as the
// kit (idem/cmd/idem-bench/RESULTS.md):
//
//   - First delivery: Powertools makes 3 calls with the handler's write;
//     the kit 1, claim and effect in one transaction.
//   - A handler that fails after its effect: Powertools deletes its
//     record and the effect stays, applied again on redelivery (100 of 100
//     credits twice); the kit writes nothing until the handler returns.
//   - A process that dies after its effect: the INPROGRESS record blocks
//     redeliveries until the invocation's remaining time runs out, then
//     the effect is applied again (100 of 100 twice); the kit commits the
//     effect with the claim or not at all (0 of 100).
//   - Concurrent duplicates: both apply once (0 of 100 twice); Powertools'
//     losers get "already in progress" and must be retried, the kit's
//     answer as duplicates.
//   - Warm duplicates: both answer from a local cache with no call
//     (Powertools' useLocalCache, the kit's CacheSize); neither cache
//     changes the crash window.
//   - What the effect may be: Powertools, anything the handler does; the
//     kit, the DynamoDB writes it commits, calls out under a lease (at most
//     one in flight per key, a late original fenced off) and messages
//     through the outbox.
//
// # What is not promised
//
//   - Calls out that are neither in the outbox nor under a lease: a service
//     that honours no key (email), called from a handler directly, may see
//     a call twice after a crash.
//   - Active-active global tables (above).
//   - Retention shorter than the sender's redelivery horizon: once a claim
//     expires, a redelivery is a new message.
//   - A message the producer sends again as new: on a standard queue with
//     no IdempotencyKey attribute a re-send has a new messageId and is a
//     second message; so is a webhook whose sender changes its key.
//   - Delivery itself: a message that exhausts its receives goes to the
//     dead-letter queue; a sender that does not retry (GitHub) may see an
//     error for an effect that was applied.
//   - Order beyond a FIFO message group.
//   - A claim deleted by hand while a warm environment caches it (above).
//
// # Upgrading
//
// From the previous release:
//
//   - Outgoing messages' ids name the claim that committed them (its table,
//     key and time, and the message's index), so a message claimed again
//     after its claim expired, or the same id claimed in another table, is
//     sent under new ids. Outbox items written before the upgrade keep the
//     id stored in them and the relay sends them under it: items in flight
//     are delivered once, under their old ids. OutboxID and the Outbox*
//     constants are gone; tests read the outbox with idemtest.Outbox.
//   - [Options.KeyPrefix] ends with "#" ("IDEM#"); New refuses another.
//     Changing a prefix changes every key: deploy on drained sources, as
//     idem/sqsconsumer's doc describes for FIFO keys.
//   - An expired pending claim is absent in lease mode too: a message under
//     its key is processed (it was a *KeyReuseError, or a
//     *StaleLeaseError).
//   - Wrap fingerprints an EventBridge event by its source, detail-type and
//     detail, not its envelope, so a resend with a new id and time is a
//     Duplicate. [WrapOptions] takes the event type (WrapOptions[E]) and a
//     Fingerprint for other event types. Claims stored before hold the whole
//     event's digest and still match only the same bytes.
//   - [Effect.Rejected] returns ([]byte, error): an error fails the
//     delivery (a *HandlerError) with nothing recorded, where it could only
//     panic before.
//   - Gone from the API, as no user called them: Recover,
//     Store.CheckSource, CheckLease, ReportFailure, ReportRefusal,
//     Store.Options, Store.Table and DefaultAttributes (each attribute's
//     default is on [AttributeNames]). sqsconsumer.ErrDeadline and
//     stream.ErrDeadline are one [ErrDeadline].
//
// The release before: Options.Metrics and MetricsNamespace are gone (add
// an emf.Writer to Options.Observers to keep the EMF lines; a Store without
// one writes none), and a Scope or a Source used as the scope may not hold
// "#" (keys already stored stay as they are: rename such a scope, or set a
// Scope without one, before upgrading). The adapters' docs hold their own
// notes: idem/sqsconsumer (FIFO keys), idem/webhook (routes as sources),
// idem/outbox (EventBridge detail fields).
package idem
