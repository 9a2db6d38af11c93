package batch

import (
	"time"

	"github.com/idemkit/kit/idem"
)

// Options are the options every batch consumer takes, for its records of
// type R. Every default is written once, on its field, and applied in the
// consumer's New.
type Options[R any] struct {
	// Key reads a record's idempotency key; a record whose key is empty
	// (or only white space) or unreadable is reported failed. Defaults to
	// the consumer's own, its DefaultKey, which its package doc describes.
	Key KeyFunc[R]

	// Source names the sender in logs and metrics and, unless the Store
	// sets idem.Options.Scope, scopes the keys, so New refuses one the
	// Store cannot take as a message's Source. Set, it is one scope for
	// every queue, topic or cluster the function reads. Defaults to the
	// consumer's own, read from each record, which its package doc names.
	Source string

	// Concurrency bounds how many lanes (the package doc) run at once:
	// records of a standard queue, an SQS FIFO queue's message groups,
	// Kafka partitions. Unused with BatchTransactions. Defaults to 10, the
	// event source mappings' default batch size.
	Concurrency int

	// BatchTransactions commits the batch's records together, through
	// idem.Store.ProcessBatch, in as few transactions as DynamoDB's limits
	// allow: one call for a batch of new records whose effects touch
	// different items, two when it holds duplicates. Each call takes at
	// most one record of each lane, so a lane's records still commit in
	// order, and helps a batch of many lanes, not a batch of one. Handlers
	// run one after another. Not with Lease. Defaults to false: each record
	// in a transaction of its own, lanes concurrently.
	BatchTransactions bool

	// DeadlineMargin is the time kept in hand before the Lambda deadline:
	// no record starts once less remains, and records already running are
	// cut off at half of it, so the batch response is returned before
	// Lambda times out (a timeout would retry the whole batch). Keep it
	// well under the function's timeout. Negative turns both off.
	// Defaults to 2 seconds.
	DeadlineMargin time.Duration

	// Lease, when set, runs each record's handler under a lease
	// (idem.Store.ProcessLeased), for handlers that call other services
	// before their writes can be described: the claim is taken first, the
	// handler calls out with idem.LeaseFromContext's key, and a record whose
	// lease another delivery holds is reported failed, with the rest of its
	// lane, to come back when the source redelivers it (an SQS message
	// after its visibility timeout, a Kafka partition from that record).
	// The lease ends DeadlineMargin/2 plus LeaseOptions.Reserve before the
	// Lambda deadline at the latest. Not with BatchTransactions. Defaults
	// to nil: no lease, the claim and the effect in one transaction.
	Lease *idem.LeaseOptions
}
