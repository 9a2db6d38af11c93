package main

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/idemkit/kit/functions/internal/credit"
	"github.com/idemkit/kit/functions/queue/internal/handler"
	"github.com/idemkit/kit/idem"
	"github.com/idemkit/kit/idem/idemtest"
)

func TestMain(m *testing.M) {
	if os.Getenv("QUEUE_TEST_RUN_MAIN") == "1" {
		main() // for TestStartupFailsOnBadEnvironment
		return
	}
	idemtest.Main(m)
}

func readEvent(t *testing.T, name string) []byte {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("..", "..", "events", name))
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

// TestEventsRoundTrip decodes each event into events.SQSEvent, refusing
// fields the type does not have, and expects every member of the file back,
// equal, when the value is encoded again.
func TestEventsRoundTrip(t *testing.T) {
	for _, file := range []string{"sqs-credits.json", "sqs-credits-fifo.json"} {
		t.Run(file, func(t *testing.T) {
			idemtest.CheckJSONRoundTrip(t, readEvent(t, file), &events.SQSEvent{})
		})
	}
}

// TestEventsInvokeTheFunction runs each event through the function's
// handler against the local DynamoDB endpoint, twice, as a redelivery of the
// whole batch would.
func TestEventsInvokeTheFunction(t *testing.T) {
	for _, tc := range []struct {
		file     string
		failed   []string
		balances map[string]int
	}{
		// A duplicate of evt_001 inside the batch; "five hundred" cents.
		{"sqs-credits.json", []string{"f2b6c3d0-91e4-4a5b-8c7d-6e5f4a3b2c1d"}, map[string]int{"acc-9": 500, "acc-7": 350}},
		// Group acc-9 stops at its zero-cent credit; acc-7 goes on.
		{"sqs-credits-fifo.json", []string{"b3f1d2c4-8e7a-4b6c-9d5e-0a1f2b3c4d5e", "d5f3a4e6-0a9c-4d8e-bf7a-2c3d4e5f6a7b"}, map[string]int{"acc-9": 100, "acc-7": 350}},
	} {
		t.Run(tc.file, func(t *testing.T) {
			e := idemtest.NewEnv(t)
			var logs bytes.Buffer
			store, err := idem.New(e.Client, e.Processed, func(o *idem.Options) {
				o.Logger = slog.New(slog.NewJSONHandler(&logs, nil))
			})
			if err != nil {
				t.Fatal(err)
			}
			var ev events.SQSEvent
			if err := json.Unmarshal(readEvent(t, tc.file), &ev); err != nil {
				t.Fatal(err)
			}
			h, err := handler.New(store, credit.Applier{AccountsTable: e.Accounts})
			if err != nil {
				t.Fatal(err)
			}
			for _, delivery := range []string{"first", "again"} {
				resp, err := h(context.Background(), ev)
				if err != nil {
					t.Fatalf("%s delivery: want no function error, got %v", delivery, err)
				}
				var failed []string
				for _, f := range resp.BatchItemFailures {
					failed = append(failed, f.ItemIdentifier)
				}
				if !slices.Equal(failed, tc.failed) {
					t.Errorf("%s delivery: batchItemFailures: want %q, got %q", delivery, tc.failed, failed)
				}
				for account, want := range tc.balances {
					if got := e.Balance(t, account); got != int64(want) {
						t.Errorf("%s delivery: balance of %s: want %d, got %d", delivery, account, want, got)
					}
				}
			}
			if !strings.Contains(logs.String(), "invalid credit") {
				t.Errorf("the malformed credit's reason is not logged:\n%s", logs.String())
			}
		})
	}
}

// TestStartupFailsOnBadEnvironment runs main in a child process: a bad
// environment must stop it before lambda.Start, with a message naming the
// variable.
func TestStartupFailsOnBadEnvironment(t *testing.T) {
	for _, tc := range []struct {
		name, days, want string
	}{
		{"zero days", "0", "RETENTION_DAYS"},
		{"fraction", "1.5", "whole number of days"},
		{"missing tables", "", "PROCESSED_TABLE"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cmd := exec.Command(os.Args[0], "-test.run=^$")
			cmd.Env = append(os.Environ(), "QUEUE_TEST_RUN_MAIN=1", "RETENTION_DAYS="+tc.days, "ACCOUNTS_TABLE=accounts")
			if tc.days != "" {
				cmd.Env = append(cmd.Env, "PROCESSED_TABLE=processed")
			} else {
				cmd.Env = append(cmd.Env, "PROCESSED_TABLE=")
			}
			out, err := cmd.CombinedOutput()
			if err == nil || !strings.Contains(string(out), tc.want) {
				t.Fatalf("want a failed start-up saying %q, got %v:\n%s", tc.want, err, out)
			}
		})
	}
}
