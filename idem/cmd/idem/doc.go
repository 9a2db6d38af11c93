// Command idem is the on-call engineer's tool for an idemkit processed-ids
// table and the dead-letter queues of its consumers: it shows a message's
// claim, lists claims, forgets one so that its message is processed
// again, and sorts a dead-letter queue into what was applied and what was
// not.
//
//	go install github.com/idemkit/kit/idem/cmd/idem@latest
//
//	idem -table TABLE [global flags] SUBCOMMAND [flags]
//
//	inspect  one claim: outcome, claim time, expiry, fingerprint, stored answer, lease, outbox messages
//	list     claims by -source, -since/-until and -outcome; a Scan whose cost is printed first
//	forget   delete a final claim (Processed or Rejected) with a conditional delete; --yes to do it
//	dlq      classify a DLQ's messages as applied, never-applied, key-reused, pending or unreadable;
//	         -redrive --yes sends the never-applied back, -delete-applied --yes deletes the applied
//
// It reads claims as the Store that wrote them: keys from the adapters' own
// functions (sqsconsumer.AttributeKey, DeduplicationKey, …; the webhook
// presets' Sources; a Mux route as a Receiver's default Source), records
// decoded by the kit's codec, outbox items by the ids wire.ID gives them.
// The global flags -prefix, -scope, -sort-key, -sort-key-value and -attr
// mirror the Store's idem.Options; give the ones the functions set.
// Every subcommand takes -json for scripts (one object a line for list
// and dlq). Nothing is deleted or sent without --yes. Exit status: 0 done
// or a dry run, 1 not found, refused or failed, 2 bad input.
//
// # Configuration
//
// Credentials and Region come from the SDK's default chain
// (config.LoadDefaultConfig: AWS_PROFILE or -profile, AWS_REGION or
// -region, SSO, …), and the clients honour AWS_ENDPOINT_URL_DYNAMODB,
// AWS_ENDPOINT_URL_SQS and AWS_ENDPOINT_URL themselves. For a running
// make local stack, -local bin/local/stack.json takes the stack's
// endpoints and Region from the state file idem-local writes (as
// idem-local send does); its tables are named idem-local-<LogicalId>, and
// -queue takes a queue's logical id:
//
//	idem -local bin/local/stack.json -table idem-local-ProcessedTable dlq -queue CreditsDeadLetterQueue
//
// The deployed stack's names are its outputs (ProcessedTableName,
// CreditsDeadLetterQueueUrl, …: aws cloudformation describe-stacks). The
// command calls dynamodb:GetItem, Scan, DescribeTable and DeleteItem, and
// sqs:GetQueueUrl, GetQueueAttributes, ListDeadLetterSourceQueues,
// ReceiveMessage, ChangeMessageVisibility, DeleteMessage and SendMessage.
//
// # Reading a dead-letter queue without consuming it
//
// SQS has no peek. A receive with a visibility timeout of 0 leaves each
// message visible, so the next receive returns the same ones again and a
// queue of more than a few messages cannot be paged through. dlq instead
// receives each message with a short visibility timeout (-hold, 1 minute),
// so that the next receive returns others, until a receive comes back
// empty or -max are read, then makes every message it did not delete
// visible again at once (ChangeMessageVisibilityBatch to 0), also after
// an error or a Ctrl-C; if the command dies, SQS shows them again after
// the hold. Each read counts a receive: ApproximateReceiveCount grows by
// one a run, harmless on a DLQ without a redrive policy of its own (dlq
// warns when it has one: enough reads would move its messages on). While
// dlq runs, the messages it read are hidden from anyone else reading the
// DLQ; run it when no redrive (StartMessageMoveTask) is under way. On a
// FIFO DLQ, SQS returns no more of a message group while one of its
// messages is hidden, so one run sees at most one receive's worth (up to
// 10) of each group.
//
// Each message is keyed as its consumer keys it (-key-func, the names of
// sqsconsumer's functions, or a comma list of them for sqsconsumer.FirstKey;
// the consumer's Source by -source, else the source queue's name, which
// ListDeadLetterSourceQueues finds) and its claim read:
//
//	applied        a Processed or Rejected claim of the same payload (the body's SHA-256): safe to delete
//	never-applied  no claim, or an expired one not of this payload applied: redrive it
//	key-reused     a claim of another payload under its key: the consumer refused it; a human decides
//	pending        a lease holds the claim, or held it and ended without a commit
//	unreadable     no key of the kind -key-func reads, or one that cannot be a claim key
//
// A message whose claim of the same payload has expired is still applied:
// the kit would take the claim as absent and apply it again, which a
// redrive must not cause. -redrive sends a copy of each never-applied
// message to the source queue (the same body and message attributes; on
// FIFO the same group and deduplication id, which SQS drops as a duplicate
// if its first send is under 5 minutes old), and deletes it from the DLQ
// only once the send succeeded. A redriven message gets a new messageId,
// so a consumer keyed by messageId (sqsconsumer.MessageIDKey) sees a new
// message; one keyed by an IdempotencyKey or a FIFO deduplication id sees
// the same one, and answers a redrive of a message that was in fact
// applied Duplicate: there, the classification saves a round trip and
// tells people what happened, while exactly-once rests on the claims.
// Under messageId keys it matters: a redrive of an applied message would
// be applied again (SQS's own DLQ redrive would do that to every one).
//
// # Runbook: a message in the dead-letter queue
//
// DeadLetterQueueAlarm (credits) or LedgerDeadLetterQueueAlarm (the
// ledger's credit.applied messages): a message failed maxReceiveCount (5)
// times.
//
//  1. Find why: the function's log lines at WARN for the queue's Source
//     ("idem: Failed" with its error, "idem: KeyReuse" with both
//     fingerprints), by the message's messageId.
//  2. Sort the DLQ, moving nothing:
//     idem -table $TABLE dlq -queue $DLQ_URL
//     (keys by sqsconsumer.DefaultKey; the ledger's consumer: -source
//     ledger -key-func attribute). The reference
//     QueueFunction also keys a message by its body's "id", which no
//     -key-func reads: a message without an IdempotencyKey attribute shows
//     as never-applied by its messageId; check it with
//     idem inspect -queue $QUEUE -id <the body's id>.
//  3. applied: the effect is committed (a delivery committed, and the
//     receives left ran out before one was answered Duplicate: throttled
//     invokes, timeouts, failures before the claim). Remove them:
//     dlq … -delete-applied --yes.
//  4. never-applied: deploy the fix for the cause first, or they come
//     back; then dlq … -redrive --yes, and watch them leave the source
//     queue (the function's Processed metric for the Source).
//  5. key-reused, pending, unreadable: the sections below; unreadable
//     messages lack the key the consumer reads: fix the producer, then
//     send the message again with a key and delete the DLQ copy by hand.
//  6. Run dlq again: what is left needs a person.
//
// # Runbook: a claim stuck pending
//
// Deliveries of one message fail with "idem: InFlight" (another delivery
// holds its lease) or "idem: Failed" with a StaleLeaseError (pending since
// longer than the key lifetime), or dlq shows it pending.
//
//  1. idem … inspect -source $SOURCE -id $ID (or -queue/-route/-stripe …).
//  2. lease live until T: a delivery is running the handler; wait until T.
//     Forgetting now would let a second delivery run it at the same time
//     (the first one's commit would then apply nothing, fenced, but any
//     call it made out is made again).
//  3. lease released, or ended: the handler failed or timed out, maybe
//     after calling another service with the claim key (Lease.Key, or
//     Lease.StepKey) as its Idempotency-Key. Nothing is needed: the next
//     delivery takes the lease over and calls again with the same key,
//     which the service deduplicates. Redrive the message if it is in the
//     DLQ.
//  4. Claimed longer ago than LeaseOptions.KeyLifetime (24h; the
//     StaleLeaseError): the kit refuses a new lease, since the service may
//     have forgotten the key. Ask the service what it did under the key
//     (the receipts service, Stripe's request log). If nothing: idem …
//     forget -source $SOURCE -id $ID --force (read its notes), then --force
//     --yes, then redrive. If it acted: apply the rest of the effect by
//     hand and leave the claim pending: every redelivery then fails with
//     StaleLeaseError and never calls again; delete those from the DLQ.
//
// # Runbook: a forced reprocess
//
// A message must be applied again: its effect was undone (a restore of the
// accounts table), or its recorded rejection no longer holds (the account
// now exists).
//
//  1. idem … inspect …: its outcome, its answer, the outbox messages it
//     sent. Those were sent and stay sent: a reprocess sends new ones under
//     new ids, which the ledger takes as new entries. Undo their effects
//     downstream too, or do not reprocess.
//  2. idem … forget … (a dry run), and read what it prints; then the same
//     with --yes. The delete is conditional on the claim being as read.
//  3. Recycle the consumer's warm environments (update the function's
//     configuration): with Options.CacheSize, an environment that saw the
//     claim answers its redeliveries Duplicate from memory until the claim
//     would have expired.
//  4. Send the message again as its sender would: the same IdempotencyKey
//     (SQS), the same Idempotency-Key, or Stripe's and GitHub's redelivery
//     of the same event.
//  5. idem … inspect …: a new claim time, the new outcome and answer.
//
// # Runbook: the duplicate-rate and failure alarms
//
// QueueDuplicateRateAlarm, CreditsWebhookDuplicateRateAlarm and
// StripeWebhookDuplicateRateAlarm: over 20% (DuplicateRateThresholdPercent)
// of a Source's deliveries were Duplicate in 2 of 3 five-minute periods,
// with at least 10 deliveries. A Duplicate applied nothing: exactly-once
// held. The spike says someone is sending again: on the queue, the
// function failing whole batches (QueueFunctionErrorsAlarm) or timing out
// after its commit, a visibility timeout shorter than a batch's work, a
// producer resending, or a redrive of applied messages; on a webhook, the
// sender retrying because answers came late or as 5xx (Stripe retries for
// 3 days). The Duplicate log lines (INFO) carry the key and the claim's
// claimedAt: a claim seconds older than its duplicates is a retry storm of
// one delivery; days older, a sender replaying old messages. idem … list
// -source $SOURCE -since 1h shows what was claimed meanwhile; idem …
// inspect … shows one claim and the answer every duplicate was given.
//
// QueueFailuresAlarm, CreditsWebhookFailuresAlarm and
// StripeWebhookFailuresAlarm count Failed and KeyReuse. KeyReuse is one
// key claimed with another payload: a producer reusing ids, or changing a
// message's bytes between retries (a timestamp in the body); two senders
// sharing a Source. The WARN line has both fingerprints; idem … inspect …
// shows the stored one, its time and its answer. Queue messages refused
// this way end in the DLQ as key-reused. If it is a new message, the
// producer sends it under a new key (delete the DLQ copy); if it is the
// first message with benign changes, its effect is applied: delete it.
// Never forget the first claim to let the second through unless the first
// effect was undone (a forced reprocess).
//
// # Runbook: was evt_X applied, when, by which delivery, with what answer?
//
//	idem -table $TABLE inspect -queue $QUEUE -message-attribute IdempotencyKey=evt_X   # the credits queue
//	idem -table $TABLE inspect -source credits -idempotency-key evt_X                   # POST /webhooks/credits
//	idem -table $TABLE inspect -stripe evt_X                                            # POST /webhooks/stripe
//
// Outcome Processed (or Rejected, a recorded refusal) is applied, at
// "claimed at"; Pending is in flight or failed (above); no claim is never
// applied, or longer ago than RetentionDays. The answer is the one every
// duplicate got (a webhook's status, headers and body). The outbox lines
// are the credit.applied messages, whose ids are the ledger's entries.
// Where the function traces (OTEL_* set: the ADOT layer, or make local),
// the "trace" line is the delivery that made the claim: open that trace
// id in the tracing backend for its span (outcome, attempts, each
// DynamoDB call) and, across the outbox, the relay's send and the next
// consumer's delivery; every delivery of the key, duplicates included,
// carries idem.key.sha256, the value inspect prints. Untraced, find the
// delivery in the function's logs at "claimed at" (the Processed line is
// logged at DEBUG; the template logs INFO, so look for the invocation at
// that time; under a lease, at the outbox items' createdAt, the commit's
// time).
package main
