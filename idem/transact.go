package idem

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemkit/kit/idem/internal/wire"
)

// The transaction that commits a claim with its effect: the claim's
// conditional Put, the effect's writes (and outbox items) with it, sent
// and retried; and what its failures mean.

// commitEffect commits rec with eff under a new claim of rec.Key. A
// pending claim whose lease ended, left by a lease-mode delivery, is
// committed over, in a second transaction only then: this delivery's
// handler calls nothing out.
func (s *Store) commitEffect(ctx context.Context, rec Record, eff Effect) (Result, error) {
	res, err := s.finish(ctx, claimant{s.claim, s.met}, rec, eff)
	if lh := (*LeaseHeldError)(nil); errors.As(err, &lh) && lh.ended(s.opts.Now()) {
		res, err = s.finish(ctx, s.takeover(lh.stored), rec, eff)
	}
	return res, err
}

// finish commits rec and eff's writes under c's claim and, when a
// condition of the writes fails and eff.Rejected is set, the rejection in
// their place.
func (s *Store) finish(ctx context.Context, c claimant, rec Record, eff Effect) (Result, error) {
	res, err := s.commit(ctx, c, rec, eff.Writes)
	var rej *RejectedError
	if eff.Rejected == nil || !errors.As(err, &rej) {
		return res, err
	}
	if rec, err = s.rejection(rec, eff, rej); err != nil {
		return Result{}, err
	}
	res, err = s.commit(ctx, c, rec, nil)
	if err == nil && res.Outcome == Processed {
		res.Outcome, res.Rejection = Rejected, rej
	}
	return res, err
}

// rejection is rec recording rej as the message's outcome: a claim without
// the effect, whose response eff.Rejected gives.
func (s *Store) rejection(rec Record, eff Effect, rej *RejectedError) (Record, error) {
	var resp []byte
	var rerr error
	if err := recoverPanic(rec.Key, "Effect.Rejected", func() error { resp, rerr = eff.Rejected(rej); return nil }); err != nil {
		return Record{}, err
	}
	if rerr != nil {
		return Record{}, &HandlerError{Key: rec.Key, Err: fmt.Errorf("Effect.Rejected: %w", rerr)}
	}
	rec.Outcome, rec.Response = Rejected, resp
	if len(rec.Response) > s.opts.MaxResponseBytes {
		return Record{}, &InvalidError{Key: rec.Key, Reason: fmt.Sprintf("rejection response is %d bytes; the limit is %d (Options.MaxResponseBytes)", len(rec.Response), s.opts.MaxResponseBytes)}
	}
	return rec, nil
}

// claimant is a way to claim a key: the claim's Put for a record, and what
// the item a failed claim condition returned means. Process claims a key
// no live claim holds (Store.claim, Store.met); a lease takes over or
// commits its own pending claim (lease.go).
type claimant struct {
	put func(Record) types.TransactWriteItem
	met func(Record, map[string]types.AttributeValue) (Result, error)
}

// claim is the conditional Put that claims rec.Key: it succeeds when no
// record holds the key, or when the one that does has expired but not yet
// been deleted by TTL. A pending claim whose lease ended, left by a
// lease-mode delivery, is taken over by another Put (lease.go), at the
// cost of a second transaction only then: a longer condition here would
// slow every claim.
func (s *Store) claim(rec Record) types.TransactWriteItem {
	return s.put(rec, "attribute_not_exists(#k) OR #e < :now", s.claimNames,
		map[string]types.AttributeValue{
			":now": &types.AttributeValueMemberN{Value: strconv.FormatInt(rec.ClaimedAt.Unix(), 10)},
		})
}

// put is the Put of rec, on condition.
func (s *Store) put(rec Record, condition string, names map[string]string, values map[string]types.AttributeValue) types.TransactWriteItem {
	a := s.opts.Attributes
	item := maps.Clone(rec.keyItem) // identify's, which other reads and writes share
	item[a.ExpiresAt] = &types.AttributeValueMemberN{Value: strconv.FormatInt(rec.ExpiresAt.Unix(), 10)}
	item[a.ClaimedAt] = &types.AttributeValueMemberS{Value: rec.ClaimedAt.UTC().Format(time.RFC3339Nano)}
	item[a.Source] = &types.AttributeValueMemberS{Value: rec.Source}
	item[a.Fingerprint] = &types.AttributeValueMemberS{Value: rec.Fingerprint}
	if rec.PayloadDigest != rec.Fingerprint {
		item[a.PayloadDigest] = &types.AttributeValueMemberS{Value: rec.PayloadDigest}
	}
	item[a.Outcome] = &types.AttributeValueMemberS{Value: string(rec.Outcome)}
	if len(rec.Response) > 0 {
		item[a.Response] = &types.AttributeValueMemberB{Value: rec.Response}
	}
	if rec.Token != 0 { // kept, so that a later lease's token is larger
		item[a.Token] = &types.AttributeValueMemberN{Value: strconv.FormatInt(rec.Token, 10)}
	}
	if rec.traceparent != "" { // which delivery committed it: its trace (idem inspect shows it)
		item[wire.TraceParentAttr] = &types.AttributeValueMemberS{Value: rec.traceparent}
	}
	return types.TransactWriteItem{Put: &types.Put{
		TableName:                           &s.table,
		Item:                                item,
		ConditionExpression:                 aws.String(condition),
		ExpressionAttributeNames:            names,
		ExpressionAttributeValues:           values,
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	}}
}

// commit sends c's claim of rec and writes as one transaction, retrying
// conflicts and throttling with jittered backoff within ctx's deadline.
func (s *Store) commit(ctx context.Context, c claimant, rec Record, writes []types.TransactWriteItem) (Result, error) {
	items := make([]types.TransactWriteItem, 0, len(writes)+1)
	items = append(items, c.put(rec))
	items = append(items, writes...)
	var sent sendLog
	for attempt := 1; ; attempt++ {
		// A new input each attempt, its ClientRequestToken nil: the SDK
		// fills the token in and reuses it across its own retries, which
		// makes an ambiguous commit safe to resend; our retries after a
		// cancellation are new transactions and need a new token.
		in := &dynamodb.TransactWriteItemsInput{TransactItems: items}
		cctx, span := s.call(ctx, "TransactWriteItems", items)
		_, err := s.client.TransactWriteItems(cctx, in, sent.option)
		endCall(span, err)
		sent.attempts++
		if err == nil {
			rec.keyItem = nil // the Store's own: a Result's Record is the record as stored
			return Result{Outcome: Processed, Record: rec}, nil
		}
		res, err, retry := s.classify(c, rec, writes, err, &sent)
		if !retry {
			return res, err
		}
		if attempt >= s.opts.MaxAttempts {
			return Result{}, &RetryableError{Key: rec.Key, Attempts: sent.count(), Err: err}
		}
		if err := s.sleep(ctx, attempt); err != nil {
			return Result{}, &RetryableError{Key: rec.Key, Attempts: sent.count(), Err: err}
		}
	}
}

// classify turns a failed TransactWriteItems into the delivery's outcome,
// or says it is worth another attempt. sent tells whether a request went
// out: an error that is not DynamoDB's answer may follow a commit.
func (s *Store) classify(c claimant, rec Record, writes []types.TransactWriteItem, err error, sent *sendLog) (Result, error, bool) {
	var tce *types.TransactionCanceledException
	if !errors.As(err, &tce) {
		if isContention(err) { // a global table's write in another Region, say
			return Result{}, err, true
		}
		return Result{}, callError(rec.Key, "", err, sent), false
	}
	reasons := tce.CancellationReasons
	if len(reasons) > 0 && aws.ToString(reasons[0].Code) == "ConditionalCheckFailed" {
		res, err := c.met(rec, reasons[0].Item)
		return res, err, false
	}
	retry := false
	for i, r := range reasons {
		switch aws.ToString(r.Code) {
		case "ConditionalCheckFailed":
			if i > 0 && i <= len(writes) && outboxID(writes[i-1]) != "" {
				id := outboxID(writes[i-1])
				return Result{}, &InvalidError{Key: rec.Key, Reason: fmt.Sprintf("the outgoing message %s: its key %q is another item's: do Stores share the table without distinct KeyPrefixes?", id, s.outboxKey(id)), Server: true}, false
			}
			if i > 0 && i <= len(writes) {
				return Result{}, &RejectedError{Key: rec.Key, Index: i - 1, Table: writeTable(writes[i-1]), Item: r.Item}, false
			}
		case "TransactionConflict", "ThrottlingError", "ProvisionedThroughputExceeded":
			retry = true
		case "ValidationError":
			what := fmt.Sprintf("effect write %d", i-1)
			switch {
			case i == 0:
				what = "the claim"
			case i <= len(writes) && outboxID(writes[i-1]) != "":
				what = "the outgoing message " + outboxID(writes[i-1])
			}
			return Result{}, &InvalidError{Key: rec.Key, Reason: what + ": " + aws.ToString(r.Message), Server: true}, false
		}
	}
	if retry {
		return Result{}, err, true
	}
	return Result{}, &StoreError{Key: rec.Key, Err: err}, false
}

// How DynamoDB names and measures the items of a transaction, as
// validateEffect (run.go) checks an effect against its limits before
// anything is sent.

// emptyKeyValue is the name of a key attribute whose string or binary
// value is empty, which DynamoDB refuses (a ValidationException, which
// would otherwise fail the delivery as the kit's fault, on every retry).
func emptyKeyValue(k map[string]types.AttributeValue) string {
	for name, v := range k {
		switch v := v.(type) {
		case *types.AttributeValueMemberS:
			if v.Value == "" {
				return name
			}
		case *types.AttributeValueMemberB:
			if len(v.Value) == 0 {
				return name
			}
		}
	}
	return ""
}

// target is one item: a table and its canonical key.
type target struct{ table, key string }

func (s *Store) addTarget(seen map[target]int, t target, i int, bad func(string, ...any) error) error {
	if j, dup := seen[t]; dup {
		if j < 0 {
			return bad("effect write %d is on the claim record itself", i)
		}
		return bad("effect writes %d and %d are on the same item of %s; a transaction allows one action per item", j, i, t.table)
	}
	seen[t] = i
	return nil
}

// describeWrite returns a write's table, its Key (nil for a Put) and its
// approximate size in bytes.
func describeWrite(w types.TransactWriteItem) (table string, key map[string]types.AttributeValue, size int, err error) {
	ops := 0
	var names map[string]string
	var values map[string]types.AttributeValue
	var exprs []*string
	if w.Put != nil {
		ops++
		table, names, values = aws.ToString(w.Put.TableName), w.Put.ExpressionAttributeNames, w.Put.ExpressionAttributeValues
		size += itemSize(w.Put.Item)
		exprs = append(exprs, w.Put.ConditionExpression)
		if len(w.Put.Item) == 0 {
			return "", nil, 0, fmt.Errorf("Put without an Item")
		}
	}
	if w.Update != nil {
		ops++
		table, key, names, values = aws.ToString(w.Update.TableName), w.Update.Key, w.Update.ExpressionAttributeNames, w.Update.ExpressionAttributeValues
		exprs = append(exprs, w.Update.UpdateExpression, w.Update.ConditionExpression)
		if aws.ToString(w.Update.UpdateExpression) == "" {
			return "", nil, 0, fmt.Errorf("Update without an UpdateExpression")
		}
	}
	if w.Delete != nil {
		ops++
		table, key, names, values = aws.ToString(w.Delete.TableName), w.Delete.Key, w.Delete.ExpressionAttributeNames, w.Delete.ExpressionAttributeValues
		exprs = append(exprs, w.Delete.ConditionExpression)
	}
	if w.ConditionCheck != nil {
		ops++
		table, key, names, values = aws.ToString(w.ConditionCheck.TableName), w.ConditionCheck.Key, w.ConditionCheck.ExpressionAttributeNames, w.ConditionCheck.ExpressionAttributeValues
		exprs = append(exprs, w.ConditionCheck.ConditionExpression)
		if aws.ToString(w.ConditionCheck.ConditionExpression) == "" {
			return "", nil, 0, fmt.Errorf("ConditionCheck without a ConditionExpression")
		}
	}
	switch {
	case ops == 0:
		return "", nil, 0, fmt.Errorf("no operation (set one of Put, Update, Delete, ConditionCheck)")
	case ops > 1:
		return "", nil, 0, fmt.Errorf("%d operations in one write; set exactly one", ops)
	case table == "":
		return "", nil, 0, fmt.Errorf("no TableName")
	case w.Put == nil && len(key) == 0:
		return "", nil, 0, fmt.Errorf("no Key")
	}
	size += len(table) + itemSize(key) + itemSize(values)
	for k, v := range names {
		size += len(k) + len(v)
	}
	for _, e := range exprs {
		size += len(aws.ToString(e))
	}
	return table, key, size, nil
}

// itemSize approximates DynamoDB's item size: attribute names plus values.
func itemSize(item map[string]types.AttributeValue) int {
	n := 0
	for name, v := range item {
		n += len(name) + valueSize(v)
	}
	return n
}

func valueSize(v types.AttributeValue) int {
	switch v := v.(type) {
	case *types.AttributeValueMemberS:
		return len(v.Value)
	case *types.AttributeValueMemberN:
		return len(v.Value)/2 + 2
	case *types.AttributeValueMemberB:
		return len(v.Value)
	case *types.AttributeValueMemberSS:
		n := 0
		for _, s := range v.Value {
			n += len(s)
		}
		return n
	case *types.AttributeValueMemberNS:
		n := 0
		for _, s := range v.Value {
			n += len(s)/2 + 2
		}
		return n
	case *types.AttributeValueMemberBS:
		n := 0
		for _, b := range v.Value {
			n += len(b)
		}
		return n
	case *types.AttributeValueMemberL:
		n := 3
		for _, e := range v.Value {
			n += 1 + valueSize(e)
		}
		return n
	case *types.AttributeValueMemberM:
		return 3 + itemSize(v.Value) + len(v.Value)
	default: // BOOL, NULL
		return 1
	}
}

// canonicalKey renders a key so that equal keys compare equal.
func canonicalKey(k map[string]types.AttributeValue) string {
	if len(k) == 1 { // the usual key: nothing to sort, one string to build
		for name, v := range k {
			if v, ok := v.(*types.AttributeValueMemberS); ok {
				return name + "\x00S" + v.Value + "\x00"
			}
		}
	}
	var b strings.Builder
	for _, name := range sortedNames(k) {
		b.WriteString(name)
		b.WriteByte(0)
		switch v := k[name].(type) {
		case *types.AttributeValueMemberS:
			b.WriteString("S" + v.Value)
		case *types.AttributeValueMemberN:
			b.WriteString("N" + v.Value)
		case *types.AttributeValueMemberB:
			b.WriteString("B" + string(v.Value))
		default:
			fmt.Fprintf(&b, "%T%v", v, v)
		}
		b.WriteByte(0)
	}
	return b.String()
}

// sortedNames are an item's or a key's attribute names, sorted.
func sortedNames[V any](m map[string]V) []string {
	names := make([]string, 0, len(m))
	for n := range m {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}
