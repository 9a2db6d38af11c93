package idem_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemkit/kit/idem"
	"github.com/idemkit/kit/idem/emf"
)

// seen is what a Store logged and counted: its JSON log records and its
// EMF lines.
type seen struct{ log, metrics bytes.Buffer }

func (s *seen) options(o *idem.Options) {
	o.Logger = slog.New(slog.NewJSONHandler(&s.log, &slog.HandlerOptions{Level: slog.LevelDebug}))
	m, err := emf.New(&s.metrics)
	if err != nil {
		panic(err)
	}
	o.Observers = append(o.Observers, m)
}

// lines are buf's JSON lines.
func lines(t *testing.T, buf *bytes.Buffer) []map[string]any {
	t.Helper()
	var out []map[string]any
	for sc := bufio.NewScanner(bytes.NewReader(buf.Bytes())); sc.Scan(); {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("%q is not JSON: %v", sc.Text(), err)
		}
		out = append(out, m)
	}
	return out
}

// checkNotFound checks that err is the missing table's error, and that the
// Store logged it once at ERROR and counted it TableNotFound, naming the
// tables and the Region in both.
func checkNotFound(t *testing.T, err error, s *seen, claims bool, tables []string, region string) {
	t.Helper()
	var nf *idem.TableNotFoundError
	if !errors.As(err, &nf) || !errors.Is(err, idem.ErrTableNotFound) || !errors.Is(err, idem.ErrInvalid) || errors.Is(err, idem.ErrRetryable) {
		t.Fatalf("want a *TableNotFoundError matching ErrTableNotFound and ErrInvalid, not ErrRetryable; got %T %v", err, err)
	}
	if nf.Claims != claims || !slices.Equal(nf.Tables, tables) || nf.Region != region {
		t.Errorf("want Claims %v, Tables %q, Region %q; got %v, %q, %q", claims, tables, region, nf.Claims, nf.Tables, nf.Region)
	}
	t.Logf("error: %v", err)
	logs := lines(t, &s.log)
	if len(logs) != 1 || logs[0]["level"] != "ERROR" || logs[0]["outcome"] != "TableNotFound" ||
		logs[0]["table"] != strings.Join(tables, ",") || logs[0]["region"] != region || logs[0]["error"] != err.Error() {
		t.Errorf("want one ERROR record of outcome TableNotFound naming %q in %q, got %v", tables, region, logs)
	}
	metrics := lines(t, &s.metrics)
	if len(metrics) != 1 || metrics[0]["TableNotFound"] != 1.0 || metrics[0]["Failed"] != nil ||
		metrics[0]["Table"] != strings.Join(tables, ",") || metrics[0]["Region"] != region {
		t.Errorf("want one EMF line counting TableNotFound, with Table %q and Region %q, got %v", tables, region, metrics)
	}
	s.log.Reset()
	s.metrics.Reset()
}

// transactOnly is a client with TransactWriteItems alone: no describe.
type transactOnly struct{ c *dynamodb.Client }

func (c transactOnly) TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, optFns ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error) {
	return c.c.TransactWriteItems(ctx, in, optFns...)
}

// TestMissingClaimsTable: a Store given a claims table that does not exist
// (a typo) fails each delivery with one clear error naming the table and
// the client's Region, a configuration error counted TableNotFound, not
// a retryable failure; nothing is applied, no transaction is sent, and
// once the table exists the next delivery claims. The same holds when the
// Store does not read the table's description before claiming
// (WritesInOneRegion): the transaction's answer is told apart by the
// description read then; and under a lease.
func TestMissingClaimsTable(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	region := e.client.Options().Region
	desc, err := e.client.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: &e.processed})
	if err != nil {
		t.Fatal(err)
	}
	typo := e.processed + "-typo"
	var s seen
	store, err := idem.New(e.client, typo, s.options)
	if err != nil {
		t.Fatalf("New does not call DynamoDB, so it cannot know: %v", err)
	}
	e.calls.Reset()
	for range 2 {
		_, err := store.Process(ctx, msg, e.creditHandler(nil))
		checkNotFound(t, err, &s, true, []string{typo}, region)
		if !strings.Contains(err.Error(), `processed-ids table "`+typo+`" not found in `+region) {
			t.Errorf("want the error to say the table is not found in %s, got %v", region, err)
		}
	}
	if got := e.calls.Count("TransactWriteItems"); got != 0 {
		t.Errorf("want no transaction sent, got %d", got)
	}
	if got := e.calls.Count("DescribeTable"); got != 2 {
		t.Errorf("want the table described again by each delivery until it exists, got %d DescribeTable calls", got)
	}

	for _, tc := range []struct {
		name    string
		leased  bool
		process func(*idem.Store) (idem.Result, error)
	}{
		{"WritesInOneRegion", false, func(st *idem.Store) (idem.Result, error) { return st.Process(ctx, msg, e.creditHandler(nil)) }},
		{"WritesInOneRegion, leased", true, func(st *idem.Store) (idem.Result, error) {
			return st.ProcessLeased(ctx, msg, e.creditHandler(nil))
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var s seen
			st, err := idem.New(e.client, typo, s.options, func(o *idem.Options) { o.WritesInOneRegion = true })
			if err != nil {
				t.Fatal(err)
			}
			_, err = tc.process(st)
			checkNotFound(t, err, &s, true, []string{typo}, region)
		})
	}
	if got := e.balance(t, "acc-9"); got != 0 {
		t.Fatalf("nothing may be applied, got a balance of %d", got)
	}

	// The table is created: the next delivery claims.
	if _, err := e.client.CreateTable(ctx, &dynamodb.CreateTableInput{TableName: &typo, BillingMode: types.BillingModePayPerRequest,
		KeySchema: desc.Table.KeySchema, AttributeDefinitions: desc.Table.AttributeDefinitions}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = e.client.DeleteTable(context.Background(), &dynamodb.DeleteTableInput{TableName: &typo})
	})
	if res, err := store.Process(ctx, msg, e.creditHandler(nil)); err != nil || res.Outcome != idem.Processed || e.balance(t, "acc-9") != 500 {
		t.Fatalf("once the table exists: want Processed and a balance of 500, got %v %v, %d", res.Outcome, err, e.balance(t, "acc-9"))
	}
}

// TestMissingEffectTable: a transaction DynamoDB answers
// ResourceNotFoundException while the claims table exists names the
// effect's table(s) (DynamoDB does not say which of several) and the
// Region, counted TableNotFound; nothing is applied or claimed. A client
// that cannot describe the claims table names it among the candidates. In
// a batch, the message whose table is missing fails alone.
func TestMissingEffectTable(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	region := e.client.Options().Region
	missing := e.accounts + "-typo"
	write := func(table string) types.TransactWriteItem {
		w, err := idem.Update(table, map[string]string{"account": "acc-9"}, expression.Add(expression.Name("balance"), expression.Value(500)))
		if err != nil {
			t.Fatal(err)
		}
		return w
	}
	handler := func(tables ...string) idem.Handler {
		return func(context.Context, idem.Message) (idem.Effect, error) {
			var eff idem.Effect
			for _, table := range tables {
				eff.Writes = append(eff.Writes, write(table))
			}
			return eff, nil
		}
	}
	for _, tc := range []struct {
		name   string
		client idem.TransactWriteAPI
		writes []string
		want   []string
		region string
	}{
		{"one effect table", e.client, []string{missing}, []string{missing}, region},
		{"two effect tables", e.client, []string{e.accounts, missing}, []string{e.accounts, missing}, region},
		{"a client that cannot describe", transactOnly{e.client}, []string{missing}, []string{e.processed, missing}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var s seen
			store, err := idem.New(tc.client, e.processed, s.options)
			if err != nil {
				t.Fatal(err)
			}
			_, err = store.Process(ctx, msg, handler(tc.writes...))
			checkNotFound(t, err, &s, false, tc.want, tc.region)
			if tc.region == "" && !strings.Contains(err.Error(), "in the client's Region") {
				t.Errorf("want the error to say the client's Region, got %v", err)
			}
		})
	}

	t.Run("a batch", func(t *testing.T) {
		var s seen
		store, err := idem.New(e.client, e.processed, s.options)
		if err != nil {
			t.Fatal(err)
		}
		out := store.ProcessBatch(ctx, []idem.Message{{ID: "evt_bad", Source: "credits"}, {ID: "evt_good", Source: "credits"}},
			func(ctx context.Context, i int, m idem.Message) (idem.Effect, error) {
				if i == 0 {
					return handler(missing)(ctx, m)
				}
				return handler(e.accounts)(ctx, m)
			})
		if out[1].Err != nil || out[1].Result.Outcome != idem.Processed {
			t.Errorf("the message whose tables exist: want Processed, got %v %v", out[1].Result.Outcome, out[1].Err)
		}
		var nf *idem.TableNotFoundError
		if !errors.As(out[0].Err, &nf) || !slices.Equal(nf.Tables, []string{missing}) {
			t.Errorf("the message whose table is missing: want a *TableNotFoundError naming %s, got %v", missing, out[0].Err)
		}
	})
	if got := e.balance(t, "acc-9"); got != 500 {
		t.Errorf("want the batch's good message alone applied (500), got %d", got)
	}
	if got := e.claimCount(t); got != 1 {
		t.Errorf("want the batch's good message alone claimed, got %d claims", got)
	}
}
