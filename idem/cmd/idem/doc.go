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
//	dlq      classify a DLQ's messages against the claims of the queue each came from;
//	         -redrive --yes sends the never-applied back there, -delete-applied --yes deletes the applied
//
// It reads claims as the Store that wrote them: keys from the adapters' own
// functions (sqsconsumer.AttributeKey, DeduplicationKey, …; the webhook
// presets' Sources; a Mux route or ServeMux pattern as a Receiver's
// default Source), records
// decoded by the kit's codec, outbox items by the ids wire.ID gives them.
// The global flags -prefix, -scope, -sort-key, -sort-key-value and -attr
// mirror the Store's idem.Options; give the ones the functions set. For a
// function in Lambda's tenant isolation mode, -tenant names whose claims
// are read (idem.Message.Tenant: each tenant's keys start #t=TENANT#).
// Every subcommand takes -json for scripts (one object a line for list
// and dlq). Nothing is deleted or sent without --yes.
//
// Exit status: 0 when everything asked was done (or a dry run showed it);
// 1 when a claim or queue is not found, a delete is refused, AWS failed,
// or anything asked was not done; 2 for bad input, nothing read or
// written. dlq, the one subcommand that acts on several items, exits 1
// when any message it was to send or delete was not (a send or a delete
// that failed, a copy sent whose original could not be deleted, a FIFO
// message waiting behind one of its group), with their count on stderr;
// its table and -json lines still say each message's ACTION, and a run
// again resumes. Messages it was not asked to act on (key-reused, a live
// lease, ...) fail nothing.
//
// A table that is not a processed-ids table (its key schema is not the
// claims', as the accounts table's) is named as such. A read or delete
// that meets another write on its item (TransactionConflictException, or
// ReplicatedWriteConflictException on a global table) is sent again with
// the Store's backoff, and past it fails saying "contention: ... try
// again": it never reads as "no claim" or "nothing deleted".
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
// -queue takes a queue's logical id (make local builds bin/idem and prints
// these lines; without a Region, the command run where that file is
// suggests -local):
//
//	bin/idem -local bin/local/stack.json -table idem-local-ProcessedTable inspect -queue CreditsQueue -message-attribute IdempotencyKey=evt_002
//	bin/idem -local bin/local/stack.json -table idem-local-ProcessedTable dlq -queue CreditsDeadLetterQueue
//
// The deployed stack's names are its outputs (ProcessedTableName,
// CreditsDeadLetterQueueUrl, …: aws cloudformation describe-stacks). The
// command calls dynamodb:GetItem, Scan, DescribeTable and DeleteItem, and,
// for dlq -redrive's markers, PutItem and UpdateItem; and sqs:GetQueueUrl,
// GetQueueAttributes, ListDeadLetterSourceQueues, ReceiveMessage,
// ChangeMessageVisibility, DeleteMessage and SendMessage.
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
// Each message is classed against the queue it came from: the one its
// DeadLetterQueueSourceArn names (SQS sets it on every message it moves to
// a DLQ), so a DLQ that several queues share is split by source. A message
// without it (one put there by hand) goes by -source-queue, else by the
// one queue ListDeadLetterSourceQueues names; when the DLQ serves several
// and -source-queue is not given, that message alone is refused
// (no-source). A queue given as -queue that is some queue's source and no
// queue's DLQ is named as such, with its DLQ. Each message is keyed as its
// consumer keys it (-key-func, the names of sqsconsumer's functions, or a
// comma list of them for sqsconsumer.FirstKey), under the claims' Source
// of its queue: its name, as sqsconsumer's default, or -source (one for
// every queue, or per queue: -source credits=credits,refunds=refunds-v2),
// and its claim read:
//
//	applied        a Processed or Rejected claim of the same payload (the body's SHA-256): safe to delete
//	never-applied  no claim, an expired one not of this payload applied, or a pending one whose
//	               lease was released or ran out: nothing committed; redrive it
//	copy-sent      never applied, and a -redrive sent its copy but could not delete it here: not sent again
//	undecodable    never applied, and not one JSON value in valid UTF-8, which sqsconsumer.JSONHandler
//	               refuses (-body json, the default; -body any for a consumer that takes any body)
//	key-reused     a claim of another payload under its key: the consumer refused it; a human decides
//	pending        a live lease holds the claim (left until it ends), or a claim older than -key-lifetime
//	unreadable     no key of the kind -key-func reads, or one that cannot be a claim key
//	no-source      the queue it came from is unknown: not redriven
//
// A message whose claim of the same payload has expired is still applied:
// the kit would take the claim as absent and apply it again, which a
// redrive must not cause.
//
// A pending claim is a leased delivery's (idem.Store.ProcessLeased,
// sqsconsumer's Options.Lease), which commits nothing until its handler
// succeeds. Its lease released (the handler failed) or run out (a
// timeout, an environment that died), the message was never applied:
// -redrive sends it back keyed as it was, and the consumer's next
// delivery takes the claim over (a leased consumer takes a new lease and
// calls out again with the same key, which the service it calls
// deduplicates; Process commits over it). A live lease is a delivery
// running the handler now: the message is left in the DLQ, its ACTION
// saying when the lease ends (and a second after, for clocks that differ,
// the Store takes it over); run dlq again after that. A claim made longer
// ago than -key-lifetime (the consumer's LeaseOptions.KeyLifetime, 24h by
// default) gets no new lease (StaleLeaseError): it stays pending, for the
// runbook's claim stuck pending.
//
// -redrive sends a copy of each never-applied message to the queue it came
// from: the same body and message attributes, and on FIFO the same group.
// The copy gets a messageId of its own, and on FIFO a deduplication id of
// its own ("redrive-" and the messageId): SQS drops a message resent with
// the original's deduplication id for 5 minutes after its first send, so
// the copy would never be delivered. So that the consumer still keys the
// copy as it keyed the original, the copy carries the original's messageId
// and deduplication id in the message attributes
// IdempotencyRedriveMessageId and IdempotencyRedriveDeduplicationId
// (sqsconsumer.RedriveMessageIDAttribute, RedriveDeduplicationIDAttribute),
// which sqsconsumer's key functions read in place of the copy's own: a
// consumer keyed by messageId or deduplication id needs the sqsconsumer of
// this release, and a KeyFunc of its own must read them too. Before it
// sends, the command keys the copy with -key-func and refuses to send one
// keyed otherwise. A copy of a message that was applied meanwhile, or a
// second copy, is then a Duplicate.
//
// On FIFO, -redrive sends each message group in its order, and stops the
// group at its first message that stays in the DLQ (applied ones aside,
// which need no copy): one whose send failed, one sent whose delete
// failed, or one left for a person (key-reused, undecodable, a live
// lease, ...). The rest of the group stays in the DLQ unsent, its ACTION
// naming the message it waits behind ("not sent: waits behind …"), as the
// consumer itself stops a group at its first failure: sent, they would be
// applied before it. The next run resumes the group from that message; a
// message left for a person holds its group until it is dealt with
// (deleted by hand, or redriven).
//
// The DLQ message cannot be marked, so before each send the command writes
// a redrive marker to the processed-ids table (a conditional PutItem;
// key KeyPrefix + "#redrive#" + messageId, which no claim or outbox item
// can have; kind "redrive", which the relay and list leave alone; expiring
// with the DLQ's retention), marks it sent with the copy's messageId, and
// only then deletes the message from the DLQ. A run whose DeleteMessage
// fails reports the copy sent; a later run finds the marker, classes the
// message copy-sent, never sends it again, and with -redrive --yes deletes
// it. A run that died between the marker and learning whether its send
// went leaves a marker saying the send began: the next run sends again
// (on FIFO under the same deduplication id, which SQS drops within
// 5 minutes), and the consumer applies one of the copies.
//
// # Runbook: a message in the dead-letter queue
//
// DeadLetterQueueAlarm (credits) or LedgerDeadLetterQueueAlarm (the
// ledger's credit.applied messages): a message failed maxReceiveCount (5)
// times.
//
//  1. Find why: the function's log lines at WARN for the queue's Source
//     ("idem: Failed" with its error, "idem: KeyReuse" with both
//     fingerprints), by the message's messageId, or by its key: a failure
//     logs the id and key it could read, a body that does not decode
//     included.
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
//     queue (the function's Processed metric for the Source). A run that
//     exits 1 left some undone: its last line says "not done" or "partly
//     done", each ACTION why; deal with the cause (SQS or DynamoDB
//     failing, say) and run it again. A run that says "sent …, not
//     deleted" (ACTION: redriven, but not deleted): the copy is on its
//     way; run dlq … -redrive --yes again, which deletes the message
//     without sending it again (copy-sent).
//  5. copy-sent: a copy is in the source queue already. dlq … -redrive
//     --yes deletes the DLQ message; or leave it, and once the copy is
//     applied it classes applied. Never send it by hand: only the
//     command's copy carries the original's key.
//  6. undecodable: the consumer's decoder refuses the body, and would
//     again. Fix the producer and have it send a corrected message, then
//     delete the DLQ message by hand (aws sqs delete-message); if the
//     consumer was wrong and now takes such bodies, redrive with -body any.
//  7. no-source: the message carries no DeadLetterQueueSourceArn and the
//     DLQ serves several queues: find its queue from its body or
//     attributes, then dlq … -source-queue $QUEUE -redrive --yes.
//  8. pending: a live lease, a delivery running the handler now; run dlq
//     … -redrive --yes again after the time its ACTION names. Claimed
//     longer ago than -key-lifetime: the runbook, a claim stuck pending.
//     (A lease released or run out is never-applied, step 4.)
//  9. key-reused, unreadable: the sections below; unreadable messages
//     lack the key the consumer reads: fix the producer, then send the
//     message again with a key and delete the DLQ copy by hand.
//  10. Run dlq again: what is left needs a person.
//
// # Runbook: a claim stuck pending
//
// Deliveries of one message fail with "idem: InFlight" (another delivery
// holds its lease) or "idem: Failed" with a StaleLeaseError (pending since
// longer than the key lifetime), or dlq shows it pending (a live lease, or
// a claim older than -key-lifetime).
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
//     which the service deduplicates. If the message is in the DLQ, dlq
//     classes it never-applied: dlq … -redrive --yes sends it back.
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
// StripeWebhookFailuresAlarm count Failed, KeyReuse and TableNotFound.
// TableNotFound is a configuration error, not an outage: a table the
// function writes does not exist in its Region. The ERROR line
// ("idem: TableNotFound") names it and the Region (fields table and
// region; the EMF line's Table and Region): the claims table given to
// idem.New (a typo in its name or the environment variable, a stack in
// another Region), or, when it exists, the effect's table, or the
// candidates when the transaction wrote several. Nothing was applied; the
// queue's messages fail and come back, then go to the DLQ, and webhook
// senders get a 500. Fix the name (redeploy) or create the table; new
// deliveries then claim, and the dead-lettered ones classify
// never-applied: redrive them (the dead-letter runbook). KeyReuse is one
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
