package idemtest

import (
	"context"
	"fmt"
	"io"
	"os"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/idemkit/kit/idem"
	"github.com/idemkit/kit/idem/emf"
)

// Main is a package's whole TestMain: it runs the tests, then stops the
// local server they shared, if they started one.
//
//	func TestMain(m *testing.M) { idemtest.Main(m) }
func Main(m *testing.M) {
	code := m.Run()
	Stop()
	os.Exit(code)
}

// Env is one test's tables on the shared endpoint: a processed-ids table
// and an accounts table (partition key "account"), and a client that
// counts its calls.
type Env struct {
	Client    *dynamodb.Client
	Calls     *CallCounter
	Processed string
	Accounts  string
}

// NewEnv creates a test's Env; optFns shape the processed-ids table as a
// Store with the same options expects (a sort key, other attribute names).
func NewEnv(tb testing.TB, optFns ...func(*idem.Options)) *Env {
	tb.Helper()
	calls := &CallCounter{}
	c := Client(tb, calls.Option)
	e := &Env{Client: c, Calls: calls}
	e.Processed = ProcessedTable(tb, c, optFns...)
	e.Accounts = CreateTable(tb, c, Table{Name: "accounts", HashKey: "account"})
	calls.Reset()
	return e
}

// ExampleEnv is NewEnv for an Example, which has no testing.TB: without a
// local DynamoDB it prints one line saying what is missing and returns
// false, and the example fails on that line instead of panicking.
//
//	env, ok := idemtest.ExampleEnv(ctx)
//	if !ok {
//		return
//	}
func ExampleEnv(ctx context.Context) (*Env, bool) {
	endpoint, err := SharedEndpoint()
	e := &Env{Calls: &CallCounter{}}
	if err == nil {
		e.Client = NewClient(endpoint, e.Calls.Option)
		e.Processed, err = MakeTable(ctx, e.Client, Table{Name: "processed", HashKey: idem.DefaultAttributes.Key, TTLAttribute: idem.DefaultAttributes.ExpiresAt})
	}
	if err == nil {
		e.Accounts, err = MakeTable(ctx, e.Client, Table{Name: "accounts", HashKey: "account"})
	}
	if err != nil {
		fmt.Println("this example needs a local DynamoDB:", err)
		return nil, false
	}
	return e, true
}

// Balance is the "balance" of account in the Env's accounts table, 0 when
// the item or attribute is absent.
func (e *Env) Balance(tb testing.TB, account string) int64 {
	tb.Helper()
	return Number(tb, e.Client, e.Accounts, "account", account, "balance")
}

// Claims is how many claim records the processed-ids table holds, the
// outbox items that share it left out (Outbox reads those).
func (e *Env) Claims(tb testing.TB) int {
	tb.Helper()
	return ClaimCount(tb, e.Client, e.Processed)
}

// EMF is an emf.Writer of the kit's metric lines to w, for tests that read
// the outcomes a Store counted.
func EMF(tb testing.TB, w io.Writer) idem.Observer {
	tb.Helper()
	m, err := emf.New(w)
	if err != nil {
		tb.Fatal(err)
	}
	return m
}
