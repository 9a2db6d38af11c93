package chaos_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemkit/kit/idem/cmd/internal/localstack"
	"github.com/idemkit/kit/idem/cmd/internal/testphase"
	"github.com/idemkit/kit/idem/idemtest"
)

// TestLeaseThroughTheFunctions runs the real bootstraps under the emulator
// with RECEIPTS_URL set, so each credit first obtains a receipt under the
// kit's lease, and ends the first invoke between the receipt and the
// commit: killed, or frozen past its timeout with its commit held back
// until a redelivery has taken the lease over and committed. While the
// lease is live a redelivery makes no call; after it, the redelivery calls
// again with the same key, and the credit and its receipt land once.
func TestLeaseThroughTheFunctions(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the functions and runs them under the emulator")
	}
	cases := []struct {
		name  string
		fn    string
		act   act
		first string // the first invoke's function error
	}{
		{"queue killed after the receipt, before its commit", "queue", killBefore, "Runtime."},
		{"queue frozen past its timeout, its commit sent after the takeover", "queue", holdRequest, "Sandbox.Timedout"},
		{"webhook killed after the receipt, before its commit", "webhook", killBefore, "Runtime."},
		{"webhook frozen past its timeout, its commit sent after the takeover", "webhook", holdRequest, "Sandbox.Timedout"},
	}
	phase := testphase.Start(t, "lease through the functions", "the functions calling out under the lease, killed or frozen between the call and the commit, %d cases", len(cases))
	bin := buildFunctions(t, phase)
	passed := 0
	for _, tc := range cases {
		if t.Run(tc.name, func(t *testing.T) {
			tb := newTables(t)
			rs := startReceipts(t)
			px := newProxy(t, idemtest.Endpoint(t))
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			event, want := creditEvent(tc.fn, 1)
			key := map[string]string{"queue": "credits#evt-0", "webhook": "credits#evt-web-1"}[tc.fn]

			first := bin.function(t, tc.fn, px.url, tb, "RECEIPTS_URL="+rs.URL())
			px.arm(tc.act, 0, first.victim)
			out, err := first.Invoke(ctx, event)
			px.waitActed(t)
			var fe *localstack.FunctionError
			if !errors.As(err, &fe) || !strings.HasPrefix(fe.Type, tc.first) {
				t.Fatalf("first invoke: want a function error %s…, got %s, %v", tc.first, out, err)
			}
			first.Stop()
			if rs.Issued() != 1 || len(rs.Calls()) != 1 {
				t.Fatalf("the first invoke: want 1 receipts call, got %d calls, %d issued", len(rs.Calls()), rs.Issued())
			}

			again := bin.function(t, tc.fn, px.url, tb, "RECEIPTS_URL="+rs.URL())
			until := leaseUntil(t, tb, key)
			if time.Until(until) > time.Second { // a redelivery within the lease calls nothing
				out, err = again.Invoke(ctx, event)
				checkInFlight(t, tc.fn, out, err)
				if n := len(rs.Calls()); n != 1 {
					t.Errorf("within the lease: want no new receipts call, got %d calls", n)
				}
			} else {
				t.Logf("the lease ends in %v: too soon to redeliver within it", time.Until(until))
			}
			time.Sleep(time.Until(until) + 1100*time.Millisecond) // the lease, and the second a takeover waits for clock skew
			out, err = again.Invoke(ctx, event)
			if err != nil {
				t.Fatalf("redelivery after the lease: %v\n%s", err, again.out.String())
			}
			checkRedelivery(t, tc.fn, out, false)
			if tc.act == holdRequest {
				status, body := px.release(t)
				if status != 400 || !strings.Contains(body, "ConditionalCheckFailed") {
					t.Fatalf("the late commit: want 400 ConditionalCheckFailed (fenced), got %d %s", status, body)
				}
			}
			if got := tb.scan(t, tb.accounts, "account", "balance"); fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("balances: want %v (the credit once), got %v", want, got)
			}
			calls := rs.Calls()
			if rs.Issued() != 1 || len(calls) != 2 || calls[0].Key != key || calls[1].Key != key {
				t.Errorf("receipts: want 2 calls with key %s and 1 receipt, got %+v", key, calls)
			}
			if r := lastReceipt(t, tb, "acc-0"); r == "" || r != calls[0].Receipt {
				t.Errorf("lastReceipt: want %q, got %q", calls[0].Receipt, r)
			}
		}) {
			passed++
		}
	}
	phase.End("%d of %d cases: one credit and one receipt each", passed, len(cases))
}

// TestLeaseReceiptsFailingAndHanging: a failing and a hanging receipts
// service fail the delivery and commit nothing; the retry gets one receipt.
func TestLeaseReceiptsFailingAndHanging(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the functions and runs them under the emulator")
	}
	fns := []string{"queue", "webhook"}
	phase := testphase.Start(t, "receipts failing and hanging", "the queue and webhook functions calling a failing, then a hanging receipts service")
	bin := buildFunctions(t, phase)
	passed := 0
	for _, fn := range fns {
		if t.Run(fn, func(t *testing.T) {
			tb := newTables(t)
			rs := startReceipts(t)
			f := bin.function(t, fn, idemtest.Endpoint(t), tb, "RECEIPTS_URL="+rs.URL())
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			event, want := creditEvent(fn, 1)
			for _, fault := range []string{"fail", "hang"} {
				if fault == "fail" {
					rs.FailNext(1, 503)
				} else {
					rs.HangNext(1)
				}
				out, err := f.Invoke(ctx, event)
				if err != nil {
					t.Fatalf("receipts %s: want an answer before the timeout, got %v", fault, err)
				}
				checkFailed(t, fn, out)
				if got := tb.scan(t, tb.accounts, "account", "balance"); len(got) != 0 {
					t.Errorf("receipts %s: want nothing committed, got %v", fault, got)
				}
			}
			out, err := f.Invoke(ctx, event)
			if err != nil {
				t.Fatal(err)
			}
			checkRedelivery(t, fn, out, false)
			if got := tb.scan(t, tb.accounts, "account", "balance"); fmt.Sprint(got) != fmt.Sprint(want) || rs.Issued() != 1 {
				t.Errorf("want %v and 1 receipt, got %v and %d", want, got, rs.Issued())
			}
		}) {
			passed++
		}
	}
	phase.End("%d of %d functions: nothing committed on a failed call, one receipt on the retry", passed, len(fns))
}

// TestLeaseConcurrentEnvironments: one webhook delivery sent at once to
// three environments, the receipts service slow: one call, never two in
// flight, the others 409 until the first commits, then its replay.
func TestLeaseConcurrentEnvironments(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the functions and runs them under the emulator")
	}
	phase := testphase.Start(t, "lease across environments", "one webhook sent at once to 3 environments, the receipts service slow")
	bin := buildFunctions(t, phase)
	tb := newTables(t)
	rs := startReceipts(t)
	rs.SetLatency(500 * time.Millisecond)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	event, want := creditEvent("webhook", 1)
	statuses := make([][]int, 3)
	var wg sync.WaitGroup
	for i := range statuses {
		f := bin.function(t, "webhook", idemtest.Endpoint(t), tb, "RECEIPTS_URL="+rs.URL())
		f.Invoke(ctx, []byte(`{}`)) // warm: its init must not skew the race
		wg.Go(func() {
			for range 20 {
				out, err := f.Invoke(ctx, event)
				var resp events.APIGatewayV2HTTPResponse
				if err != nil || json.Unmarshal(out, &resp) != nil {
					t.Errorf("environment %d: %s, %v", i, out, err)
					return
				}
				statuses[i] = append(statuses[i], resp.StatusCode)
				if resp.StatusCode != 409 {
					return
				}
				time.Sleep(200 * time.Millisecond)
			}
		})
	}
	wg.Wait()
	conflicts := 0
	for i, s := range statuses {
		if len(s) == 0 || s[len(s)-1] != 200 {
			t.Errorf("environment %d: want 200 in the end, got %v", i, s)
		}
		for _, c := range s {
			if c == 409 {
				conflicts++
			}
		}
	}
	if rs.MaxInFlight() != 1 || len(rs.Calls()) != 1 || rs.Issued() != 1 {
		t.Errorf("receipts: want 1 call, 1 in flight at most; got %d calls, %d in flight", len(rs.Calls()), rs.MaxInFlight())
	}
	if got := tb.scan(t, tb.accounts, "account", "balance"); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("balances: want %v, got %v", want, got)
	}
	t.Logf("statuses per environment: %v (%d conflicts answered 409)", statuses, conflicts)
	if conflicts == 0 {
		t.Error("no delivery met the lease: the test raced nothing")
	}
	phase.End("%d receipts call(s), %d at most in flight, %d conflicts answered 409", len(rs.Calls()), rs.MaxInFlight(), conflicts)
}

// leaseUntil is when the pending claim's lease ends.
func leaseUntil(t *testing.T, tb *tables, key string) time.Time {
	t.Helper()
	item := getItem(t, tb, tb.processed, "pk", key)
	if o, _ := item["outcome"].(*types.AttributeValueMemberS); o == nil || o.Value != "Pending" {
		t.Fatalf("claim %s: want Pending, got %v", key, item)
	}
	var ms int64
	fmt.Sscan(item["leaseUntil"].(*types.AttributeValueMemberN).Value, &ms)
	return time.UnixMilli(ms)
}

func lastReceipt(t *testing.T, tb *tables, account string) string {
	t.Helper()
	s, _ := getItem(t, tb, tb.accounts, "account", account)["lastReceipt"].(*types.AttributeValueMemberS)
	if s == nil {
		return ""
	}
	return s.Value
}

func getItem(t *testing.T, tb *tables, table, key, value string) map[string]types.AttributeValue {
	t.Helper()
	out, err := tb.client.GetItem(context.Background(), &dynamodb.GetItemInput{TableName: aws.String(table), ConsistentRead: aws.Bool(true),
		Key: map[string]types.AttributeValue{key: &types.AttributeValueMemberS{Value: value}}})
	if err != nil {
		t.Fatal(err)
	}
	return out.Item
}

// checkInFlight wants a delivery that met the live lease: the record
// failed for retry, or a 409 with Retry-After.
func checkInFlight(t *testing.T, fn string, out []byte, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("within the lease: %v", err)
	}
	if fn == "queue" {
		checkFailed(t, fn, out)
		return
	}
	var resp events.APIGatewayV2HTTPResponse
	if json.Unmarshal(out, &resp) != nil || resp.StatusCode != 409 || resp.Headers["Retry-After"] == "" {
		t.Errorf("within the lease: want 409 with Retry-After, got %s", out)
	}
}

// checkFailed wants the delivery failed, nothing applied: the record in
// batchItemFailures, or a 500.
func checkFailed(t *testing.T, fn string, out []byte) {
	t.Helper()
	if fn == "queue" {
		var resp events.SQSEventResponse
		if json.Unmarshal(out, &resp) != nil || len(resp.BatchItemFailures) != 1 {
			t.Errorf("want the record failed, got %s", out)
		}
		return
	}
	var resp events.APIGatewayV2HTTPResponse
	if json.Unmarshal(out, &resp) != nil || resp.StatusCode != 500 {
		t.Errorf("want a 500, got %s", out)
	}
}
