package idem

import (
	"context"
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// TransactWriteAPI is the one DynamoDB call the kit makes outside a lease
// (ProcessLeased also needs UpdateItemAPI). *dynamodb.Client implements
// it; so can a fake in a CPU benchmark.
type TransactWriteAPI interface {
	TransactWriteItems(ctx context.Context, params *dynamodb.TransactWriteItemsInput, optFns ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error)
}

// Store claims messages in a processed-ids table and commits their effects.
// It is safe for concurrent use; build it once, outside the Lambda handler.
type Store struct {
	client TransactWriteAPI
	table  string
	opts   Options
	obs    observer
	cache  *cache // nil without Options.CacheSize
}

// maxRetentionDays keeps Retention far from time.Duration's limit (about
// 106,751 days), past which an expiry would wrap into the past and every
// redelivery would claim again.
const maxRetentionDays = 36500

// New returns a Store that keeps claim records in table.
func New(client TransactWriteAPI, table string, optFns ...func(*Options)) (*Store, error) {
	var o Options
	for _, fn := range optFns {
		fn(&o)
	}
	o.setDefaults()
	if o.OutboxTable == "" {
		o.OutboxTable = table
	}
	switch {
	case client == nil:
		return nil, errors.New("idem: New: nil DynamoDB client")
	case table == "":
		return nil, errors.New("idem: New: empty processed-ids table name")
	case o.RetentionDays < 1 || o.RetentionDays > maxRetentionDays:
		return nil, fmt.Errorf("idem: New: RetentionDays is %d; it must be a whole number of days from 1 to %d", o.RetentionDays, maxRetentionDays)
	case o.MaxResponseBytes < 0 || o.MaxAttempts < 0 || o.BackoffBase < 0 || o.BackoffMax < 0 || o.OutboxRetention < 0:
		return nil, errors.New("idem: New: MaxResponseBytes, MaxAttempts, BackoffBase, BackoffMax and OutboxRetention must not be negative")
	case len(o.SortKeyValue) > maxSortKeyBytes:
		return nil, fmt.Errorf("idem: New: SortKeyValue is %d bytes; DynamoDB allows %d", len(o.SortKeyValue), maxSortKeyBytes)
	}
	if err := checkOptions(&o); err != nil {
		return nil, fmt.Errorf("idem: New: %w", err)
	}
	return &Store{client: client, table: table, opts: o, obs: newObserver(&o), cache: newCache(o.CacheSize)}, nil
}

// Options returns the Store's options, defaults applied.
func (s *Store) Options() Options { return s.opts }

// Table is the processed-ids table's name.
func (s *Store) Table() string { return s.table }

// Process runs h for msg and commits the effect it describes together with
// msg's claim, in one TransactWriteItems.
//
// A nil error means the delivery is done: Processed, Duplicate (nothing
// applied; Result.Record.Response is the stored response), or Rejected (the
// effect's condition failed and Effect.Rejected recorded it). Any error
// means the delivery must be retried or dead-lettered: *InvalidError,
// *KeyReuseError, *RejectedError, *HandlerError, *PanicError or
// *StoreError (nothing committed), *ReplayError (a Duplicate whose
// Message.Replay failed; nothing applied), *LeaseHeldError (a ProcessLeased
// delivery of the message is running; nothing done), or *RetryableError
// (perhaps committed with its answer lost; the retry is then a
// Duplicate). A pending claim whose lease ended is committed over, in a
// second transaction: h calls nothing out.
func (s *Store) Process(ctx context.Context, msg Message, h Handler) (Result, error) {
	key := s.claimKey(msg)
	res, err := s.process(ctx, msg, key, h)
	s.obs.observe(ctx, msg, key, res, err)
	return res, err
}

// ReportFailure logs and counts, as Failed, a delivery that failed before
// Process could run, such as a queue message whose id could not be read.
func (s *Store) ReportFailure(ctx context.Context, msg Message, err error) {
	s.obs.record(ctx, Failed, msg, s.reportKey(msg), Result{}, err)
}

// ReportRefusal logs and counts, as Refused, a delivery turned away before
// its claim for the sender's fault, such as a webhook with a bad signature.
func (s *Store) ReportRefusal(ctx context.Context, msg Message, err error) {
	s.obs.record(ctx, Refused, msg, s.reportKey(msg), Result{}, err)
}

// reportKey is the claim key for logs, or "" when there is no id.
func (s *Store) reportKey(msg Message) string {
	if msg.ID == "" {
		return ""
	}
	return s.claimKey(msg)
}

func (s *Store) process(ctx context.Context, msg Message, key string, h Handler) (Result, error) {
	id, res, err, done := s.begin(msg, key)
	if done {
		return res, err
	}
	rec, eff, err := s.prepare(ctx, msg, id, h)
	if err != nil {
		return Result{}, err
	}
	res, err = s.finish(ctx, msg, rec, eff, func(rec Record) types.TransactWriteItem { return s.claim(rec, rec.ClaimedAt) })
	var lh *LeaseHeldError
	if errors.As(err, &lh) && lh.ended(s.opts.Now()) {
		// A pending claim a lease-mode delivery left, its lease ended: this
		// handler calls nothing out, so it may commit over it.
		res, err = s.finish(ctx, msg, rec, eff, func(rec Record) types.TransactWriteItem { return s.takeoverClaim(rec, lh.stored) })
	}
	return res, err
}

// finish commits rec and eff's writes, the claim built by claim, and, when
// a condition of the writes fails and eff.Rejected is set, the rejection
// in their place.
func (s *Store) finish(ctx context.Context, msg Message, rec Record, eff Effect, claim func(Record) types.TransactWriteItem) (Result, error) {
	res, err := s.commit(ctx, claim(rec), rec, eff.Writes)
	s.remember(res, err)
	var rej *RejectedError
	if eff.Rejected != nil && errors.As(err, &rej) {
		if rec, err = s.rejection(rec, eff, rej); err != nil {
			return Result{}, err
		}
		res, err = s.commit(ctx, claim(rec), rec, nil)
		s.remember(res, err)
		if err == nil && res.Outcome == Processed {
			res.Outcome, res.Rejection = Rejected, rej
		}
	}
	if err == nil && res.Outcome == Duplicate {
		err = replay(msg, rec.Key, res.Record)
	}
	if err != nil {
		return Result{}, err
	}
	return res, nil
}

// begin validates msg and identifies it; done says the cache answered it
// (res, err) or it is invalid (err).
func (s *Store) begin(msg Message, key string) (id Record, res Result, err error, done bool) {
	if err := s.validateMessage(msg, key); err != nil {
		return Record{}, Result{}, err, true
	}
	id = s.identify(msg, key)
	if res, err, ok := s.cached(id); ok {
		if err == nil {
			err = replay(msg, key, res.Record)
		}
		if err != nil {
			return id, Result{}, err, true
		}
		return id, res, nil, true
	}
	return id, Result{}, nil, false
}

// replay runs msg.Replay on a Duplicate's stored record.
func replay(msg Message, key string, stored Record) error {
	if msg.Replay == nil {
		return nil
	}
	err := Recover(key, "Message.Replay", func() error { return msg.Replay(stored) })
	var pe *PanicError
	if err != nil && !errors.As(err, &pe) {
		err = &ReplayError{Key: key, Err: err}
	}
	return err
}

// identify is what tells msg apart from other payloads under its key: its
// fingerprint and its payload's digest.
func (s *Store) identify(msg Message, key string) Record {
	digest := Fingerprint(msg.Payload)
	fp := msg.Fingerprint
	if fp == "" {
		fp = digest
	}
	return Record{Key: key, Source: msg.Source, Fingerprint: fp, PayloadDigest: digest}
}

// cached answers a delivery whose key the cache holds, as the claim's
// condition would.
func (s *Store) cached(id Record) (Result, error, bool) {
	stored, ok := s.cache.get(id.Key, s.opts.Now())
	if !ok {
		return Result{}, nil, false
	}
	if !sameMessage(stored, id) {
		return Result{}, &KeyReuseError{Key: id.Key, Fingerprint: id.Fingerprint, Stored: stored}, true
	}
	res := duplicate(stored, id)
	res.Cached = true
	return res, nil, true
}

// remember caches the record a commit left in DynamoDB, or found there.
func (s *Store) remember(res Result, err error) {
	if s.cache == nil {
		return
	}
	var kr *KeyReuseError
	switch {
	case err == nil:
		s.cache.put(res.Record)
	case errors.As(err, &kr) && kr.Stored.Outcome != Pending: // a pending claim may yet be released
		s.cache.put(kr.Stored)
	}
}

// prepare runs h for a validated msg identified as id, validates the
// effect it describes and builds the claim record to commit with it;
// ClaimedAt is the claim's now.
func (s *Store) prepare(ctx context.Context, msg Message, id Record, h Handler) (Record, Effect, error) {
	eff, err := runHandler(withDelivery(ctx, msg, id.Key), msg, id.Key, h)
	if err != nil {
		return Record{}, Effect{}, err
	}
	now := s.opts.Now()
	rec := id
	rec.ClaimedAt, rec.ExpiresAt = now, now.Add(s.opts.Retention())
	if err := s.validateEffect(rec, &eff, now); err != nil {
		return Record{}, Effect{}, err
	}
	rec.Outcome, rec.Response = Processed, eff.Response
	return rec, eff, nil
}

// rejection is rec recording rej as the message's outcome: a claim without
// the effect, whose response eff.Rejected gives.
func (s *Store) rejection(rec Record, eff Effect, rej *RejectedError) (Record, error) {
	var resp []byte
	if err := Recover(rec.Key, "Effect.Rejected", func() error { resp = eff.Rejected(rej); return nil }); err != nil {
		return Record{}, err
	}
	rec.Outcome, rec.Response = Rejected, resp
	if len(rec.Response) > s.opts.MaxResponseBytes {
		return Record{}, &InvalidError{Key: rec.Key, Reason: fmt.Sprintf("rejection response is %d bytes; the limit is %d (Options.MaxResponseBytes)", len(rec.Response), s.opts.MaxResponseBytes)}
	}
	return rec, nil
}

func runHandler(ctx context.Context, msg Message, key string, h Handler) (eff Effect, err error) {
	if h == nil {
		return Effect{}, &InvalidError{Key: key, Reason: "nil handler"}
	}
	err = Recover(key, "the handler", func() error {
		var herr error
		if eff, herr = h(ctx, msg); herr != nil {
			return &HandlerError{Key: key, Err: herr}
		}
		return nil
	})
	if err != nil {
		return Effect{}, err
	}
	return eff, nil
}
