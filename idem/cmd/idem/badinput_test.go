package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/idemkit/kit/idem/idemtest"
)

// TestBadInput: each mistake is named on stderr with exit code 2, before
// any call to AWS.
func TestBadInput(t *testing.T) {
	f := setup(t)
	for _, tc := range []struct {
		name string
		args []string // after -table, unless noTable
		want string
	}{
		{"no subcommand", nil, "usage: idem -table TABLE"},
		{"unknown subcommand", []string{"frobnicate"}, `unknown subcommand "frobnicate"; want one of inspect, list, forget, dlq`},
		{"unknown flag", []string{"inspect", "-nope"}, "flag provided but not defined: -nope"},
		{"an argument", []string{"inspect", "-key", "k", "extra"}, `unexpected argument "extra"`},
		{"no message named", []string{"inspect", "-source", "credits"}, "name the message: one of -id"},
		{"two names", []string{"inspect", "-stripe", "evt_1", "-github", "g-1"}, "-stripe and -github conflict"},
		{"two sources", []string{"inspect", "-id", "x", "-source", "a", "-queue", "b"}, "-source and -queue conflict"},
		{"a raw key with a source", []string{"forget", "-key", "credits#x", "-source", "credits"}, "-key is the whole claim key"},
		{"a group without its id", []string{"inspect", "-group", "g", "-source", "q", "-id", "x"}, "-group needs -dedup"},
		{"a group alone", []string{"inspect", "-group", "g", "-queue", "q.fifo"}, "-group needs -dedup"},
		{"an SQS key without its queue", []string{"inspect", "-message-attribute", "IdempotencyKey=x"}, "needs -queue"},
		{"another attribute", []string{"inspect", "-queue", "q", "-message-attribute", "Key=x"}, "sqsconsumer.AttributeKey reads IdempotencyKey=value"},
		{"a route that is not one", []string{"inspect", "-route", "/charges", "-idempotency-key", "k"}, `want "METHOD /path"`},
		{"a Source with #", []string{"inspect", "-source", "a#b", "-id", "x"}, `holds a "#"`},
		{"two Idempotency-Keys", []string{"inspect", "-idempotency-key", "a,b"}, "more than one value"},
		{"a prefix without #", []string{"-prefix", "IDEM", "inspect", "-key", "x"}, `KeyPrefix "IDEM" does not end with "#"`},
		{"an unknown attribute", []string{"-attr", "color=red", "inspect", "-key", "x"}, "-attr color=red: no such field"},
		{"a sort key value alone", []string{"-sort-key-value", "X", "inspect", "-key", "x"}, "-sort-key-value needs -sort-key"},
		{"a malformed -since", []string{"list", "-since", "yesterday"}, `-since "yesterday": want an RFC 3339 time`},
		{"since after until", []string{"list", "-since", "1h", "-until", "2h"}, "is not before -until"},
		{"an outcome never stored", []string{"list", "-outcome", "Duplicate"}, "Duplicate and KeyReuse are deliveries"},
		{"dlq without a queue", []string{"dlq"}, "-queue is required"},
		{"dlq: --yes alone", []string{"dlq", "-queue", "q", "--yes"}, "--yes confirms -redrive or -delete-applied"},
		{"dlq: an unknown key function", []string{"dlq", "-queue", "q", "-key-func", "body"}, `-key-func "body": want default, attribute`},
		{"dlq: a hold SQS refuses", []string{"dlq", "-queue", "q", "-hold", "13h"}, "from 1s to 12h"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, errOut := f.mustRun(t, exitUsage, tc.args...)
			contains(t, "stderr", errOut, tc.want)
			if out != "" {
				t.Errorf("expect nothing on stdout, got %s", out)
			}
		})
	}

	t.Run("a table that is not there", func(t *testing.T) {
		for _, args := range [][]string{{"inspect", "-key", "k"}, {"list", "--yes"}} {
			_, errOut := f.mustRun(t, exitFail, append([]string{"-table", "no-such-table"}, args...)...)
			contains(t, "stderr", errOut, `no table "no-such-table" here`)
		}
	})

	t.Run("no -table", func(t *testing.T) {
		var out, errb bytes.Buffer
		if code := run(context.Background(), []string{"inspect", "-source", "credits", "-id", "x"}, &out, &errb); code != exitUsage {
			t.Fatalf("expect exit 2, got %d: %s", code, errb.String())
		}
		contains(t, "stderr", errb.String(), "-table is required")
	})

	t.Run("help", func(t *testing.T) {
		for _, args := range [][]string{{"-h"}, {"help"}, {"dlq", "-h"}} {
			var out, errb bytes.Buffer
			if code := run(context.Background(), args, &out, &errb); code != exitOK || !strings.Contains(out.String(), "usage: idem -table TABLE") {
				t.Errorf("idem %s: exit %d, stdout %s", strings.Join(args, " "), code, out.String())
			}
			t.Logf("idem %s\n%s", strings.Join(args, " "), out.String())
		}
	})
}

// TestLocalStateFile: -local reads a running make local stack's state
// file for its endpoints, over what the environment names.
func TestLocalStateFile(t *testing.T) {
	f := setup(t)
	consume(t, f.store(time.Time{}), idemtest.SQSMessage("credits", `{"cents":5}`, map[string]string{"IdempotencyKey": "evt_1"}))
	state := filepath.Join(t.TempDir(), "stack.json")
	b, _ := json.Marshal(map[string]any{"region": "us-east-1", "dynamodbEndpoint": idemtest.Endpoint(t), "sqsEndpoint": "http://127.0.0.1:9",
		"queues": map[string]string{"CreditsQueue": "http://127.0.0.1:9/123456789012/credits"}})
	if err := os.WriteFile(state, b, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("AWS_ENDPOINT_URL_DYNAMODB", "http://127.0.0.1:9") // nothing listens there
	out, _ := f.mustRun(t, exitOK, "-local", state, "inspect", "-queue", "CreditsQueue", "-message-attribute", "IdempotencyKey=evt_1")
	contains(t, "inspect", out, "credits#evt_1", "Processed")
	_, errOut := f.mustRun(t, exitUsage, "-local", filepath.Join(t.TempDir(), "stack.json"), "inspect", "-key", "x")
	contains(t, "stderr", errOut, "is make local running")
}
