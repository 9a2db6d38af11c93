// Package chaos holds the kit's proofs of exactly-once under faults. It has
// no API: its tests are the point, and they run in plain go test against
// the local DynamoDB endpoint (idem/idemtest). The tests in *_linux_test.go
// run the real functions' bootstraps under the Lambda Runtime Interface
// Emulator and kill them with signals, so they run on Linux only.
//
//   - TestChaosReplay sends messages through both adapters (SQS per record
//     and in batch transactions; webhooks as REST and HTTP API events,
//     plain and base64), each delivered 1 to 5 times in shuffled order by
//     20 concurrent workers, over a DynamoDB client whose requests are
//     throttled, fail with 5xx, are reset before they are sent, or commit
//     and lose their answer or have it cut short (idemtest.Faults); every
//     failure is redelivered until it succeeds. A per-message ledger and
//     the exact balances then show each effect applied exactly once.
//   - The kill tests (TestKilledAndTimedOut) run the real functions/queue
//     and functions/webhook bootstraps under the emulator, with a proxy in
//     front of DynamoDB that kills the function process before its
//     transaction is sent or after it committed, freezes it until the
//     Lambda timeout fires, kills it in the middle of a batch, or holds a
//     transaction back until the redelivery has committed; the same event
//     redelivered to a fresh emulator applies its effect once, and the late
//     transaction is refused.
//   - TestQueueFunctionAnswerCutAfterCommit (and idem's
//     TestAnswerLostAfterTheCommit): DynamoDB commits and its answer is cut
//     short; the record is failed for retry (a webhook gets 503 with
//     Retry-After), never reported as nothing committed, and the
//     redelivery is a Duplicate. TestQueueFunctionKeysFIFOByGroup: on a
//     high-throughput FIFO queue one deduplication id in two groups is two
//     messages, each applied once. TestStripeRetryRenderedAfresh: a Stripe
//     event delivered with pending_webhooks 2, then 1, is one credit, the
//     second answer replayed.
//   - The lease: TestLeaseThroughTheFunctions and
//     TestLeaseReceiptsFailingAndHanging run the functions with
//     RECEIPTS_URL set, killed after the receipts service answered and
//     before their commit, or frozen past their timeout with the commit
//     held back until a redelivery took the lease over: one credit, one
//     receipt, the late commit fenced off; a failing or hanging receipts
//     service fails the delivery with nothing committed.
//     TestLeaseConcurrentEnvironments sends one webhook from three
//     environments at once: one receipts call, never two in flight.
//     TestChaosLease: messages under the lease through 4
//     environments with DynamoDB faulted and the receipts service failing
//     or losing its answers: one receipt per message, at most one call in
//     flight per key.
//   - The outbox: TestChaosOutbox runs the chain (credits with an outgoing
//     message, the relay on the claims table's stream, the ledger's SQS
//     consumer) with every hop faulted: DynamoDB as above, the relay killed
//     before its send and after it, batches redelivered, SQS throttling,
//     failing or losing the answer to a batch, the ledger receiving
//     messages again after they succeeded: one ledger entry per credit,
//     none missing. TestRelayKilled SIGKILLs the real relay before its
//     SendMessageBatch reaches SQS and after SQS took it: every message is
//     sent on Lambda's retry, once or twice under one outbox id, and the
//     ledger holds one entry per credit.
//   - The hot-item path: TestChaosAggregate credits three hot accounts
//     through entries (each credit delivered 1 to 4 times on a faulted
//     DynamoDB) and folds the entries' stream with stream.Aggregate, on a
//     DynamoDB faulted twice as often, its invokes killed before they
//     commit and mid-batch (after the first of a batch's transactions),
//     batches handed over again after their checkpoint: each entry folded
//     once, each balance its credits' sum.
//   - TestManagedInstancesOneKey runs functions/queue as on Lambda Managed
//     Instances, 8 invokes at once in one process, and sends it one message
//     8 times at once: one credit, one Processed outcome; it reports the
//     transactions that reached DynamoDB, one per delivery until the Store
//     coalesces concurrent deliveries of a key.
//
// The four soaks (TestChaosReplay, TestChaosLease, TestChaosOutbox,
// TestChaosAggregate) run in make test smaller, with the same fault kinds,
// rates and assertions: 500 messages, 150, 600 credits in 6 rounds and 600
// credits, at which each DynamoDB fault kind is still met dozens of times.
// Each soak fails if its DynamoDB client was spared a kind of fault
// (TestChaosLease also if no receipts call failed or lost its answer,
// TestChaosOutbox if SQS never throttled, failed or lost an answer). Where
// a soak is too small for chance to be sure of a fault, it is forced: the
// first SendMessageBatch calls meet each SQS fault once, and the last batch
// of the relay and of the fold meets whichever of their kills and
// redeliveries the random draws left out.
// make chaos runs them at the sizes the figures below come from (2,000,
// 400, 2,000 in 20 rounds and 1,200), printing each one's line;
// -chaos.messages, -chaos.leasemessages, -chaos.outboxcredits,
// -chaos.aggregatecredits and -chaos.seed size and vary a run.
//
// One run of make chaos (seed 1, 2 shared cores, 7 December 2026):
// TestChaosReplay, 2,000 messages in 6,061 deliveries, 21.9% of 6,510
// DynamoDB requests faulted, 4,003 duplicates answered without effect, 0
// double effects, 0 lost, in 37 s; TestChaosLease, 400 messages in 1,641
// deliveries, 22.1% of 2,714 DynamoDB requests faulted and 123 receipts
// calls failed or their answers dropped, 400 receipts, at most 1 call in
// flight per key, 0 double, 0 lost, in 22 s; TestChaosOutbox, 2,000 credits
// in 10,842 deliveries across the three hops, the relay killed 20 times, 0
// double, 0 lost, in 97 s; TestChaosAggregate, 1,200 credits in 3,092
// deliveries, folded in 35 invokes (7 of them killed, 3 batches handed over
// again), each entry folded once, in 20 s. The whole run took 3 min.
package chaos
