// Package chaos holds the kit's proofs of exactly-once under faults. It has
// no API: its tests are the point, and they run in plain go test against
// the local DynamoDB endpoint (idem/idemtest).
//
//   - TestChaosReplay sends messages through both adapters, each delivered
//     1 to 5 times in shuffled order by concurrent workers, over a DynamoDB
//     client whose requests are throttled, fail with 5xx, are reset before
//     they are sent, or lose their answer after the commit
//     (idemtest.Faults); every failure is redelivered until it succeeds. A
//     per-message ledger then shows each effect applied exactly once.
//     -chaos.messages and -chaos.seed size and vary the run.
//   - The kill tests run the real functions/queue and functions/webhook
//     bootstraps under the Lambda Runtime Interface Emulator, with a proxy
//     in front of DynamoDB that kills the function process before its
//     transaction is sent or after it committed, or freezes it until the
//     Lambda timeout fires; the same event redelivered to a fresh emulator
//     applies its effect once.
//   - TestManagedInstancesOneKey runs functions/queue as on Lambda Managed
//     Instances, 8 invokes at once in one process, and sends it one message
//     8 times at once: one credit, one Processed outcome; it reports the
//     transactions that reached DynamoDB, one per delivery until the Store
//     coalesces concurrent deliveries of a key.
package chaos
