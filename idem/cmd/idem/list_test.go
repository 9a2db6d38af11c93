package main

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemkit/kit/idem"
)

// TestList: claims of two sources at three times, one of them rejected
// and one pending, with outbox items in the same table; each filter keeps
// what it names, the cost line comes first, and --json lines parse.
func TestList(t *testing.T) {
	f := setup(t)
	ctx := context.Background()
	now := time.Now()
	apply := func(at time.Time, source, id string, h idem.Handler) {
		t.Helper()
		if _, err := f.store(at).Process(ctx, idem.Message{ID: id, Source: source, Payload: []byte(id)}, h); err != nil {
			t.Fatal(err)
		}
	}
	ok := func(context.Context, idem.Message) (idem.Effect, error) {
		return idem.Effect{Messages: []idem.OutgoingMessage{{Destination: ledgerURL, Body: "sent"}}}, nil
	}
	// A credit to an account that does not exist: its rejection recorded.
	reject := func(context.Context, idem.Message) (idem.Effect, error) {
		w, err := idem.ConditionCheck(f.Accounts, map[string]string{"account": "acc-none"}, expression.AttributeExists(expression.Name("account")))
		return idem.Effect{Writes: []types.TransactWriteItem{w}, Rejected: func(*idem.RejectedError) ([]byte, error) { return []byte("no such account"), nil }}, err
	}
	apply(now.Add(-72*time.Hour), "credits", "c-old", ok)
	apply(now.Add(-30*time.Hour), "credits", "c-mid", reject)
	apply(now.Add(-30*time.Hour), "stripe", "evt_mid", ok)
	apply(now.Add(-time.Hour), "credits", "c-new", ok)
	apply(now.Add(-time.Hour), "stripe", "evt_new", ok)
	if _, err := f.store(time.Time{}).ProcessLeased(ctx, idem.Message{ID: "p-1", Source: "payouts", Payload: []byte("p")},
		func(context.Context, idem.Message) (idem.Effect, error) {
			return idem.Effect{}, errors.New("timed out")
		}); err == nil {
		t.Fatal("expect the handler's error")
	}

	keys := func(out string) []string {
		var k []string
		for line := range strings.Lines(out) {
			if fields := strings.Fields(line); len(fields) >= 4 && strings.Contains(fields[len(fields)-2], "#") {
				k = append(k, fields[len(fields)-2])
			}
		}
		slices.Sort(k)
		return k
	}
	for _, tc := range []struct {
		name string
		args []string
		want []string
	}{
		{"all", nil, []string{"credits#c-mid", "credits#c-new", "credits#c-old", "payouts#p-1", "stripe#evt_mid", "stripe#evt_new"}},
		{"by source", []string{"-source", "stripe"}, []string{"stripe#evt_mid", "stripe#evt_new"}},
		{"since a duration", []string{"-since", "48h"}, []string{"credits#c-mid", "credits#c-new", "payouts#p-1", "stripe#evt_mid", "stripe#evt_new"}},
		{"between", []string{"-since", "2d", "-until", now.Add(-2 * time.Hour).UTC().Format(time.RFC3339)}, []string{"credits#c-mid", "stripe#evt_mid"}},
		{"by outcome", []string{"-outcome", "rejected"}, []string{"credits#c-mid"}},
		{"pending", []string{"-outcome", "Pending"}, []string{"payouts#p-1"}},
		{"source and time", []string{"-source", "credits", "-until", "48h"}, []string{"credits#c-old"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, errOut := f.mustRun(t, exitOK, append([]string{"list"}, tc.args...)...)
			if got := keys(out); !slices.Equal(got, tc.want) {
				t.Errorf("expect %v, got %v in:\n%s", tc.want, got, out)
			}
			first, _, _ := strings.Cut(errOut, "\n")
			contains(t, "the first line on stderr", first, "list: a Scan reads all of "+f.Processed, "read capacity units")
			contains(t, "stderr", errOut, "items scanned")
			t.Logf("idem list %s\n%s%s", strings.Join(tc.args, " "), errOut, out)
		})
	}

	t.Run("json", func(t *testing.T) {
		out, _ := f.mustRun(t, exitOK, "list", "-json", "-source", "credits")
		var got []string
		for line := range strings.Lines(out) {
			var v claimView
			if err := json.Unmarshal([]byte(line), &v); err != nil {
				t.Fatalf("%v: %s", err, line)
			}
			if v.Outbox != nil || v.Answer != nil || v.ClaimedAt.IsZero() || v.Fingerprint == "" {
				t.Errorf("a listed claim: %+v", v)
			}
			got = append(got, v.Key+" "+v.Outcome)
		}
		slices.Sort(got)
		if want := []string{"credits#c-mid Rejected", "credits#c-new Processed", "credits#c-old Processed"}; !slices.Equal(got, want) {
			t.Errorf("expect %v, got %v", want, got)
		}
		t.Logf("idem list -json -source credits\n%s", out)
	})

	t.Run("limit", func(t *testing.T) {
		out, _ := f.mustRun(t, exitOK, "list", "-limit", "1")
		contains(t, "list -limit 1", out, "1 claim")
	})

	t.Run("over the read budget", func(t *testing.T) {
		out, errOut := f.mustRun(t, exitFail, "list", "-max-rcu", "0")
		contains(t, "stderr", errOut, "read capacity units", "exceeds -max-rcu 0: nothing was read; pass --yes")
		if out != "" || strings.Contains(errOut, "scanned") {
			t.Errorf("expect no Scan, got stdout %q, stderr %q", out, errOut)
		}
		out, _ = f.mustRun(t, exitOK, "list", "-max-rcu", "0", "--yes")
		contains(t, "with --yes", out, "6 claims")
	})
}

// TestListOne: one claim in the table is "1 item" and "1 claim", in
// words, as any other count.
func TestListOne(t *testing.T) {
	f := setup(t)
	if _, err := f.store(time.Time{}).Process(context.Background(), idem.Message{ID: "c-1", Source: "credits", Payload: []byte("x")},
		func(context.Context, idem.Message) (idem.Effect, error) { return idem.Effect{}, nil }); err != nil {
		t.Fatal(err)
	}
	out, errOut := f.mustRun(t, exitOK, "list")
	contains(t, "stderr", errOut, "about 1 item, ", "1 item scanned")
	if !strings.HasSuffix(out, "\n1 claim\n") {
		t.Errorf("expect the listing to end on 1 claim, got\n%s", out)
	}
	t.Logf("idem list\n%s%s", errOut, out)
}
