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

// Main is a package's whole TestMain: it runs the tests (m is the
// *testing.M, or a wrapper that cleans up more after them), then stops the
// local server they shared, if they started one, and exits.
//
//	func TestMain(m *testing.M) { idemtest.Main(m) }
func Main(m interface{ Run() int }) {
	code := m.Run()
	stop()
	os.Exit(code)
}

// Env is a processed-ids table and an accounts table (partition key
// "account") of their own on the shared endpoint, and a client that counts
// its calls.
type Env struct {
	Client    *dynamodb.Client
	Calls     *CallCounter
	Processed string
	Accounts  string
	// Outcomes counts the deliveries of the Stores Store builds.
	Outcomes *Outcomes
}

// NewEnv creates a test's Env, its tables deleted when the test ends;
// optFns shape the processed-ids table as a Store with the same options
// expects (a sort key, other attribute names).
func NewEnv(tb testing.TB, optFns ...func(*idem.Options)) *Env {
	tb.Helper()
	calls := &CallCounter{}
	c := Client(Endpoint(tb), calls.Option)
	e := &Env{Client: c, Calls: calls, Outcomes: &Outcomes{}}
	e.Processed = ProcessedTable(tb, c, optFns...)
	e.Accounts = CreateTable(tb, c, Table{Name: "accounts", HashKey: "account"})
	calls.Reset()
	return e
}

// Start is NewEnv for code without a testing.TB, such as a runnable
// Example: its tables stay until the server stops. Without a local
// DynamoDB it says what is missing.
func Start(ctx context.Context, optFns ...func(*idem.Options)) (*Env, error) {
	endpoint, err := sharedEndpoint()
	if err != nil {
		return nil, fmt.Errorf("idemtest: no DynamoDB endpoint: %w", err)
	}
	e := &Env{Calls: &CallCounter{}, Outcomes: &Outcomes{}}
	e.Client = Client(endpoint, e.Calls.Option)
	t := processedTable(optFns)
	if e.Processed, err = e.CreateTable(ctx, t); err != nil {
		return nil, err
	}
	if e.Accounts, err = e.CreateTable(ctx, Table{Name: "accounts", HashKey: "account"}); err != nil {
		return nil, err
	}
	e.Calls.Reset()
	return e, nil
}

// CreateTable is idemtest.CreateTable for an Env made by Start: the
// table stays until the server stops.
func (e *Env) CreateTable(ctx context.Context, t Table) (string, error) {
	return CreateTableContext(ctx, e.Client, t)
}

// Store is a Store on the Env's processed-ids table whose outcomes
// Outcomes counts; optFns are its options, and the table's (NewEnv's).
func (e *Env) Store(tb testing.TB, optFns ...func(*idem.Options)) *idem.Store {
	tb.Helper()
	s, err := idem.New(e.Client, e.Processed, append(optFns, e.Outcomes.Option)...)
	if err != nil {
		tb.Fatalf("idemtest: %v", err)
	}
	return s
}

// Environments are n Stores on the Env's processed-ids table, each with a
// DynamoDB client of its own (its own connections), as n Lambda execution
// environments of one function are: nothing in one process is shared
// between them, so their deliveries of one message race in DynamoDB.
// Outcomes counts them all, and Calls their calls; optFns are as for
// Store. Build a handler around each and hand them to ReplayAcross.
func (e *Env) Environments(tb testing.TB, n int, optFns ...func(*idem.Options)) []*idem.Store {
	tb.Helper()
	stores := make([]*idem.Store, n)
	for i := range stores {
		s, err := idem.New(Client(Endpoint(tb), e.Calls.Option), e.Processed, append(optFns, e.Outcomes.Option)...)
		if err != nil {
			tb.Fatalf("idemtest: %v", err)
		}
		stores[i] = s
	}
	return stores
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
