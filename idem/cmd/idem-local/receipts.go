package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemkit/kit/idem/cmd/internal/localstack"
)

// printReceipts prints the ledger of receipts: each account's lastReceipt
// in the accounts table beside what the receipts service saw. It prints
// what is there and fails nothing: functions that do not call out leave
// both empty.
func printReceipts(ctx context.Context, w io.Writer, s *localstack.Stack, table string, credits map[string]int, deliveries int) {
	if s.Receipts == nil {
		fmt.Fprintf(w, "\ndemo: no receipts service (-no-receipts, or no function declares RECEIPTS_URL)\n")
		return
	}
	last, err := lastReceipts(ctx, s.DynamoDB(), table)
	if err != nil {
		fmt.Fprintf(w, "\ndemo: receipts: reading %s: %v\n", table, err)
	}
	type row struct {
		calls, credits int
		receipts       map[string]bool
	}
	rows := map[string]*row{}
	get := func(acc string) *row {
		if rows[acc] == nil {
			rows[acc] = &row{receipts: map[string]bool{}}
		}
		return rows[acc]
	}
	for acc, n := range credits {
		get(acc).credits = n
	}
	for acc := range last {
		get(acc)
	}
	calls := s.Receipts.Calls()
	for _, c := range calls {
		var body struct {
			Account string `json:"account"`
		}
		if json.Unmarshal([]byte(c.Body), &body) != nil || body.Account == "" {
			continue
		}
		r := get(body.Account)
		r.calls++
		if c.Receipt != "" {
			r.receipts[c.Receipt] = true
		}
	}
	fmt.Fprintf(w, "\ndemo: receipts (%s), one per credit however often it is delivered:\n", s.Receipts.URL())
	fmt.Fprintf(w, "  %-12s %-14s %8s %8s %8s\n", "account", "lastReceipt", "credits", "receipts", "calls")
	for _, acc := range slices.Sorted(maps.Keys(rows)) {
		r := rows[acc]
		lr := last[acc]
		if lr == "" {
			lr = "-"
		}
		mark := ""
		if r.calls > 0 {
			mark = "ok"
			if len(r.receipts) != r.credits {
				mark = "UNEXPECTED"
			}
		}
		fmt.Fprintf(w, "  %-12s %-14s %8d %8d %8d  %s\n", acc, lr, r.credits, len(r.receipts), r.calls, mark)
	}
	st := s.Receipts.Stats()
	fmt.Fprintf(w, "demo: receipts service: %d call(s), %d receipt(s) issued, at most %d call(s) in flight for one key, %d refused as concurrent (409)\n",
		st.Calls, st.Issued, st.MaxInFlight, st.Conflicts)
	total := 0
	for _, n := range credits {
		total += n
	}
	switch {
	case st.Calls == 0:
		fmt.Fprintf(w, "demo: the functions made no call: they do not call out (RECEIPTS_URL unread or empty)\n")
	case st.Issued == total && st.MaxInFlight == 1:
		fmt.Fprintf(w, "demo: one receipt per credit (%d), although every message was delivered %d times and some raced\n", total, deliveries)
	default:
		fmt.Fprintf(w, "demo: %d receipt(s) for %d credit(s), at most %d call(s) at once for one key: expected one each, one at a time\n", st.Issued, total, st.MaxInFlight)
	}
}

// lastReceipts reads each account's lastReceipt, where its credits stored
// the receipt of the last one.
func lastReceipts(ctx context.Context, client *dynamodb.Client, table string) (map[string]string, error) {
	out := map[string]string{}
	err := scanAccounts(ctx, client, table, "lastReceipt", func(account string, v ddbtypes.AttributeValue) {
		if r, ok := v.(*ddbtypes.AttributeValueMemberS); ok {
			out[account] = r.Value
		}
	})
	return out, err
}

func countOf(xs []string, x string) int {
	n := 0
	for _, v := range xs {
		if v == x {
			n++
		}
	}
	return n
}
