package idem

import (
	"context"
	"errors"
	"slices"
)

// How a delivery is answered: from a claim this process knows (the
// cache's, cache.go, or the claim another delivery of its key in flight
// here settled, coalesce.go), or by running it (run.go), with a read of
// its claim beside it when its sender's recent duplicates make the read
// worth its cost (readfirst.go); and what a settled delivery leaves
// behind for the next ones.

// answer answers a delivery of id. A delivery it runs leads its key's
// call in this process; what it settles is shared on the way out (a
// panic's nothing included) with the cache, the read-first rates and the
// deliveries of the key waiting here.
func (s *Store) answer(ctx context.Context, msg Message, id Record, h Handler) (res Result, err error) {
	if stored, ok := s.cache.get(id.Key, s.opts.Now()); ok {
		return s.answerKnown(msg, id, stored)
	}
	lead, res, err := s.leadOrWait(ctx, msg, id)
	if lead == nil {
		return res, err
	}
	defer s.finishLead(msg, id, lead, &res, &err)
	read := s.startRead(ctx, msg, id)
	if read != nil && msg.Attempt > 1 {
		// A redelivery the sender counts, in a storm of them, is a
		// duplicate far more often than not: its read, waited for, answers
		// it alone, for a read's units, with no handler run and no
		// transaction to call off.
		if stored, ok := read.wait(ctx); ok {
			return s.storedAnswer(id, stored)
		}
		read = nil
	}
	return s.run(ctx, msg, id, h, read)
}

// answerKnown answers a delivery from a claim known without a call (the
// cache's, or the one a coalesced delivery's leader settled): a
// Duplicate, its stored record replayed, or a key reuse.
func (s *Store) answerKnown(msg Message, id, stored Record) (Result, error) {
	// The delivery's own bytes: the cache's and a leader's record are
	// shared by every delivery of the key, and its caller may change its
	// Result.
	stored.Response = slices.Clone(stored.Response)
	res, err := s.storedAnswer(id, stored)
	if err == nil {
		res.Cached = true
		err = replay(msg, id.Key, res.Record)
	}
	if err != nil {
		return Result{}, err
	}
	return res, nil
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

// finishLead shares what a delivery that led its key's call settled
// (*res, *err): the claim it committed or met goes into the cache, a
// Duplicate's stored record is replayed to msg, the outcome counts toward
// its sender's share of duplicates, and the deliveries of the key waiting
// in this process are answered from it. After a panic past every recovery
// *res and *err are still the zero values answer began with, which settle
// nothing: nothing is cached or counted, and the waiting ones run on
// their own.
func (s *Store) finishLead(msg Message, id Record, lead *keyCall, res *Result, err *error) {
	s.cacheSettled(*res, *err)
	if *err == nil && res.Outcome == Duplicate {
		if *err = replay(msg, id.Key, res.Record); *err != nil {
			*res = Result{}
		}
	}
	s.rates.count(msg, *res, *err)
	lead.finish(*res, *err)
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
	if err := recoverPanic(key, "Message.Replay", func() error { rerr = msg.Replay(stored); return nil }); err != nil {
		return err
	}
	if rerr != nil {
		return &ReplayError{Key: key, Err: rerr}
	}
	return nil
}
