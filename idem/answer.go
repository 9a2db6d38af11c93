package idem

import (
	"errors"
	"slices"
)

// What a claim found on a delivery's way answers it: a Duplicate of the
// message it holds, its record replayed to the delivery, or a key reuse,
// or a lease held. The claim is the cache's (cache.go), the one another
// delivery of the key in flight here settled (coalesce.go), the one a read
// found (readfirst.go), or the one a transaction's failed condition
// returned (claim.go).

// answerKnown answers a delivery from a claim known without a call (the
// cache's, or the one a coalesced delivery's leader settled): a
// Duplicate, its stored record replayed, or a key reuse.
func (s *Store) answerKnown(msg Message, id, stored Record) (Result, error) {
	res, err := s.storedAnswer(id, known(stored))
	if err == nil {
		res.Cached = true
		err = replay(msg, id.Key, res.Record)
	}
	if err != nil {
		return Result{}, err
	}
	return res, nil
}

// known is a claim the cache or a leader shares with every delivery of its
// key, with bytes of the delivery's own: its caller may change its
// Result.
func known(stored Record) Record {
	stored.Response = slices.Clone(stored.Response)
	return stored
}

// storedAnswer is what stored, a claim DynamoDB holds (or the cache
// remembers), answers a delivery whose claim would be rec: a Duplicate of
// it, a key reuse, or a lease held.
func (s *Store) storedAnswer(rec, stored Record) (Result, error) {
	switch {
	case !sameMessage(stored, rec):
		return Result{}, &KeyReuseError{Key: rec.Key, Fingerprint: rec.Fingerprint, Stored: stored}
	case stored.Outcome == Pending:
		return Result{}, held(rec.Key, stored)
	}
	return Result{Outcome: Duplicate, Record: stored, PayloadChanged: stored.PayloadDigest != rec.PayloadDigest}, nil
}

// sameMessage says whether a delivery whose record is rec is a redelivery
// of the message stored holds, rather than a reuse of its key: the same
// fingerprint, or the same bytes (as when a sender's fingerprint changed
// from the payload's digest to a provider's identity, with claims of the
// old kind still stored).
func sameMessage(stored, rec Record) bool {
	return stored.Fingerprint == rec.Fingerprint || stored.PayloadDigest == rec.PayloadDigest
}

// settledClaim is the claim DynamoDB holds for a key after a delivery of
// it ended in res, err, when that tells: the one it committed or found, or
// the claim of another payload a key reuse met. A pending claim may yet be
// released, and a failure tells nothing.
func settledClaim(res Result, err error) (Record, bool) {
	var kr *KeyReuseError
	switch {
	case err == nil && res.Record.Key != "":
		return res.Record, true
	case errors.As(err, &kr) && kr.Stored.Outcome != Pending:
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
