// Package ledger is the ledger function's logic: each credit.applied
// message on the ledger queue (sent through the outbox by the queue and
// webhook functions) becomes one ledger entry, keyed by the message's
// outbox id, through idem/sqsconsumer.
package ledger

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemkit/kit/functions/internal/credit"
	"github.com/idemkit/kit/idem"
	"github.com/idemkit/kit/idem/sqsconsumer"
)

// Source is the ledger's source in the claims, logs and metrics: its keys
// are "ledger#<outbox id>".
const Source = "ledger"

// Env is the ledger function's configuration.
type Env struct {
	ProcessedTable string // PROCESSED_TABLE, required: the claims
	LedgerTable    string // LEDGER_TABLE, required: partition key "entry" (S)
	// RetentionDays is RETENTION_DAYS, a whole number of days ≥ 1, or 0
	// when unset (the kit's default applies).
	RetentionDays int
}

// LoadEnv reads the environment; a missing or malformed variable is an
// error naming it, for the function to fail at start-up with.
func LoadEnv(getenv func(string) string) (Env, error) {
	if getenv == nil {
		getenv = os.Getenv
	}
	e := Env{ProcessedTable: getenv("PROCESSED_TABLE"), LedgerTable: getenv("LEDGER_TABLE")}
	var missing []string
	if e.ProcessedTable == "" {
		missing = append(missing, "PROCESSED_TABLE")
	}
	if e.LedgerTable == "" {
		missing = append(missing, "LEDGER_TABLE")
	}
	if len(missing) > 0 {
		return Env{}, fmt.Errorf("missing environment variable(s): %s", strings.Join(missing, ", "))
	}
	days, err := credit.RetentionDays(getenv)
	if err != nil {
		return Env{}, err
	}
	e.RetentionDays = days
	return e, nil
}

// StoreEnv is what credit.NewStore reads of the environment.
func (e Env) StoreEnv() credit.Env {
	return credit.Env{ProcessedTable: e.ProcessedTable, RetentionDays: e.RetentionDays}
}

// Entry is one ledger item: an applied credit.
type Entry struct {
	Entry   string `dynamodbav:"entry"` // the credit.applied message's outbox id
	Account string `dynamodbav:"account"`
	Cents   int64  `dynamodbav:"cents"`
}

// New returns the ledger function's batch handler: each record is keyed by
// its IdempotencyKey attribute (the outbox id the relay sets), its body
// parsed with credit.Parse, and written as one Entry into table. A record
// without the attribute, of another Type, or whose body does not parse
// fails alone, its reason logged.
func New(store *idem.Store, table string) (func(context.Context, events.SQSEvent) (events.SQSEventResponse, error), error) {
	return sqsconsumer.New(store, func(_ context.Context, rec events.SQSMessage) (idem.Effect, error) {
		e, err := Read(rec)
		if err != nil {
			return idem.Effect{}, err
		}
		w, err := idem.Put(table, e)
		return idem.Effect{Writes: []types.TransactWriteItem{w}}, err
	}, func(o *sqsconsumer.Options) { o.Key, o.Source = Key, Source })
}

// Key is the record's IdempotencyKey message attribute, the outbox id of
// the message: required, as a redelivered or re-sent message keeps no
// other id.
func Key(rec events.SQSMessage) (string, error) {
	k, err := sqsconsumer.AttributeKey(rec)
	if err == nil && k == "" {
		err = errors.New("ledger: no IdempotencyKey message attribute: a ledger entry is keyed by its outbox message's id")
	}
	return k, err
}

// Read is the entry a credit.applied record describes.
func Read(rec events.SQSMessage) (Entry, error) {
	key, err := Key(rec)
	if err != nil {
		return Entry{}, err
	}
	if a, ok := rec.MessageAttributes["Type"]; ok && a.StringValue != nil && *a.StringValue != credit.AppliedType {
		return Entry{}, fmt.Errorf("ledger: a %q message; want %q", *a.StringValue, credit.AppliedType)
	}
	c, err := credit.Parse([]byte(rec.Body))
	if err != nil {
		return Entry{}, fmt.Errorf("ledger: %w", err)
	}
	return Entry{Entry: key, Account: c.Account, Cents: c.Cents}, nil
}
