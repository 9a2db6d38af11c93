package consumer_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemkit/kit/idem"
	"github.com/idemkit/kit/idem/idemtest"
	"github.com/idemkit/kit/idem/sqsconsumer"
	"github.com/idemkit/kit/idem/webhook"
)

// TestAMisspeltTable: a consumer pointed at a table that does not exist,
// the claims table or the effect's, gets one clear error naming the table
// and its Region, logged once per delivery at ERROR and counted
// TableNotFound; nothing is applied, and nothing is lost: the SQS record
// is reported failed (it comes back, then goes to the DLQ), a webhook
// answers 500.
func TestAMisspeltTable(t *testing.T) {
	type order struct {
		Account string `json:"account"`
		Cents   int64  `json:"cents"`
	}
	for _, tc := range []struct {
		name             string
		claims, accounts string // appended to the Env's table names
	}{
		{"the claims table", "-typo", ""},
		{"the effect's table", "", "-typo"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := idemtest.NewEnv(t)
			region := env.Client.Options().Region
			claims, accounts := env.Processed+tc.claims, env.Accounts+tc.accounts
			want := `processed-ids table "` + claims + `" not found in ` + region
			if tc.accounts != "" {
				want = `effect table "` + accounts + `" not found in ` + region
			}
			var log bytes.Buffer
			var seen idemtest.Outcomes
			store, err := idem.New(env.Client, claims, seen.Option, func(o *idem.Options) {
				o.Logger = slog.New(slog.NewJSONHandler(&log, nil))
			})
			if err != nil {
				t.Fatal(err)
			}
			apply := func(o order) (idem.Effect, error) {
				w, err := idem.Update(accounts, map[string]string{"account": o.Account},
					expression.Add(expression.Name("balance"), expression.Value(o.Cents)))
				return idem.Effect{Writes: []types.TransactWriteItem{w}}, err
			}
			handle, err := sqsconsumer.New(store, sqsconsumer.JSONHandler(func(_ context.Context, o order, _ events.SQSMessage) (idem.Effect, error) {
				return apply(o)
			}))
			if err != nil {
				t.Fatal(err)
			}
			msg := idemtest.SQSMessage("credits", `{"account":"acc-1","cents":500}`, map[string]string{"IdempotencyKey": "evt-1"})
			resp, err := handle(context.Background(), idemtest.SQSEvent(msg))
			if err != nil || len(resp.BatchItemFailures) != 1 || resp.BatchItemFailures[0].ItemIdentifier != msg.MessageId {
				t.Fatalf("want the record reported failed, to come back, got %v %v", resp, err)
			}

			r, err := webhook.New(store, webhook.JSONHandler(func(_ context.Context, o order, _ webhook.Request) (webhook.Response, idem.Effect, error) {
				eff, err := apply(o)
				return webhook.Response{Body: []byte("ok")}, eff, err
			}))
			if err != nil {
				t.Fatal(err)
			}
			answer, err := r.HandleV2(context.Background(), idemtest.HTTPRequest("POST", "/credits", `{"account":"acc-1","cents":500}`, map[string]string{"Idempotency-Key": "evt-1"}))
			if err != nil || answer.StatusCode != 500 {
				t.Fatalf("want a webhook's 500, got %d %s, %v", answer.StatusCode, answer.Body, err)
			}

			var lines []map[string]any
			for line := range strings.Lines(log.String()) {
				var m map[string]any
				if err := json.Unmarshal([]byte(line), &m); err != nil {
					t.Fatal(err)
				}
				lines = append(lines, m)
			}
			for _, l := range lines {
				if l["level"] != "ERROR" || l["outcome"] != "TableNotFound" || !strings.Contains(l["error"].(string), want) || l["region"] != region {
					t.Errorf("want each delivery logged once at ERROR, saying %q, got %v", want, l)
				}
			}
			if len(lines) != 2 || seen.Count(idem.TableNotFound) != 2 || seen.Count(idem.Failed) != 0 {
				t.Errorf("want two deliveries counted TableNotFound, not Failed; got %d lines and %v", len(lines), seen.All())
			}
			t.Logf("logged: %s", lines[0]["error"])
			if env.Balance(t, "acc-1") != 0 || env.Claims(t) != 0 {
				t.Errorf("want nothing applied or claimed, got a balance of %d and %d claims", env.Balance(t, "acc-1"), env.Claims(t))
			}

			// Fixed (the name corrected, redeployed): the record, redelivered
			// or redriven from the DLQ, is applied once.
			fixed, err := sqsconsumer.New(env.Store(t), sqsconsumer.JSONHandler(func(_ context.Context, o order, _ events.SQSMessage) (idem.Effect, error) {
				return credit(env, o.Account, o.Cents)
			}))
			if err != nil {
				t.Fatal(err)
			}
			last := idemtest.Replay(context.Background(), 2, fixed, idemtest.SQSEvent(msg))[1]
			if last.Err != nil || len(last.Response.BatchItemFailures) > 0 || env.Balance(t, "acc-1") != 500 {
				t.Fatalf("once fixed: want the record applied once, got %v %v and a balance of %d", last.Response, last.Err, env.Balance(t, "acc-1"))
			}
		})
	}
}
