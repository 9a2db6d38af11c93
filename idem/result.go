package idem

import "errors"

// Result is a successful delivery's outcome.
type Result struct {
	// Outcome is Processed, Duplicate or Rejected.
	Outcome Outcome
	// Record is the claim record: the one just written, or, for a
	// Duplicate, the stored one whose Response is to be replayed.
	Record Record
	// Rejection is the failed condition, when Outcome is Rejected.
	Rejection *RejectedError
	// PayloadChanged reports a Duplicate whose payload's bytes differ from
	// the first delivery's, as they may only when Message.Fingerprint is
	// set.
	PayloadChanged bool
	// Cached reports a Duplicate answered without a call: from the
	// Store's cache (Options.CacheSize), or from another delivery of the
	// message that ran at the same time in this process.
	Cached bool
}

// answerFrom is what stored, a claim DynamoDB holds (or this process
// remembers) under k's name, answers a delivery of k: a Duplicate of it, a
// key reuse, or a lease held.
func answerFrom(k claimKey, stored Record) (Result, error) {
	switch {
	case !k.sameMessage(stored):
		return Result{}, &KeyReuseError{Key: k.name, Fingerprint: k.fingerprint, Stored: stored}
	case stored.Outcome == Pending:
		return Result{}, held(k.name, stored)
	}
	return Result{Outcome: Duplicate, Record: stored, PayloadChanged: stored.PayloadDigest != k.digest}, nil
}

// claimOf is the claim DynamoDB holds for a key after a delivery of it
// ended in res, err, when that tells: the one it committed or found, or
// the claim of another payload a key reuse met. A pending claim may yet be
// released, and a failure tells nothing.
func claimOf(res Result, err error) (Record, bool) {
	if err == nil {
		return res.Record, res.Record.Key != ""
	}
	if kr, ok := errors.AsType[*KeyReuseError](err); ok && kr.Stored.Outcome != Pending {
		return kr.Stored, true
	}
	return Record{}, false
}

// replay runs msg.Replay on a Duplicate's stored record.
func replay(msg Message, key string, stored Record) error {
	if msg.Replay == nil {
		return nil
	}
	var rerr error
	if p := recoverPanic("Message.Replay", func() { rerr = msg.Replay(stored) }); p != nil {
		p.Key = key
		return p
	}
	if rerr != nil {
		return &ReplayError{Key: key, Err: rerr}
	}
	return nil
}
