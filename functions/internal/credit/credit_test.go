package credit

import (
	"errors"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		name, body string
		want       Credit
		err        string
	}{
		{"valid", `{"id":"evt_001","account":"acc-9","cents":500}`, Credit{"evt_001", "acc-9", 500}, ""},
		{"no id", ` {"account":"a","cents":1} `, Credit{"", "a", 1}, ""},
		{"max int64", `{"account":"a","cents":9223372036854775807}`, Credit{"", "a", 9223372036854775807}, ""},
		{"empty", ``, Credit{}, "empty"},
		{"not object", `[1]`, Credit{}, "not a JSON object"},
		{"null", `null`, Credit{}, "not a JSON object"},
		{"invalid json", `{"account":`, Credit{}, "not valid JSON"},
		{"invalid utf8", "{\"account\":\"\xff\",\"cents\":1}", Credit{}, "UTF-8"},
		{"trailing data", `{"account":"a","cents":1}{}`, Credit{}, "after the JSON object"},
		{"trailing garbage", `{"account":"a","cents":1} x`, Credit{}, "after the JSON object"},
		{"account missing", `{"cents":1}`, Credit{}, `"account" must be a string`},
		{"account number", `{"account":5,"cents":1}`, Credit{}, `"account" must be a string`},
		{"account empty", `{"account":"","cents":1}`, Credit{}, `"account" is empty`},
		{"id number", `{"id":5,"account":"a","cents":1}`, Credit{}, `"id" must be a string`},
		{"cents missing", `{"account":"a"}`, Credit{}, `"cents" is missing`},
		{"cents string", `{"account":"a","cents":"500"}`, Credit{}, "whole number"},
		{"cents fraction", `{"account":"a","cents":1.5}`, Credit{}, "whole number"},
		{"cents exponent", `{"account":"a","cents":1e3}`, Credit{}, "whole number"},
		{"cents zero", `{"account":"a","cents":0}`, Credit{}, "positive"},
		{"cents negative", `{"account":"a","cents":-5}`, Credit{}, "positive"},
		{"cents overflow", `{"account":"a","cents":9223372036854775808}`, Credit{}, "64 bits"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Parse([]byte(tc.body))
			if tc.err == "" {
				if err != nil || got != tc.want {
					t.Fatalf("expect %+v, got %+v, %v", tc.want, got, err)
				}
				return
			}
			if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tc.err) {
				t.Fatalf("expect an invalid-credit error saying %q, got %v", tc.err, err)
			}
		})
	}
}

func TestLoadEnv(t *testing.T) {
	base := map[string]string{"PROCESSED_TABLE": "p", "ACCOUNTS_TABLE": "a"}
	for _, tc := range []struct {
		name  string
		set   map[string]string
		days  int
		error string
	}{
		{"defaults", nil, 0, ""},
		{"days", map[string]string{"RETENTION_DAYS": "30"}, 30, ""},
		{"zero days", map[string]string{"RETENTION_DAYS": "0"}, 0, "RETENTION_DAYS"},
		{"fraction", map[string]string{"RETENTION_DAYS": "1.5"}, 0, "whole number"},
		{"word", map[string]string{"RETENTION_DAYS": "week"}, 0, "whole number"},
		{"no tables", map[string]string{"PROCESSED_TABLE": "", "ACCOUNTS_TABLE": ""}, 0, "PROCESSED_TABLE, ACCOUNTS_TABLE"},
		{"receipts", map[string]string{"RECEIPTS_URL": "http://127.0.0.1:3002/receipts"}, 0, ""},
		{"receipts not a URL", map[string]string{"RECEIPTS_URL": "127.0.0.1:3002"}, 0, "RECEIPTS_URL"},
		{"receipts over ftp", map[string]string{"RECEIPTS_URL": "ftp://example.com/r"}, 0, "http:// or https://"},
		{"ledger", map[string]string{"LEDGER_QUEUE_URL": "https://sqs.eu-west-1.amazonaws.com/123456789012/LedgerQueue"}, 0, ""},
		{"ledger not a URL", map[string]string{"LEDGER_QUEUE_URL": "LedgerQueue"}, 0, "LEDGER_QUEUE_URL"},
		{"ledger an ARN", map[string]string{"LEDGER_QUEUE_URL": "arn:aws:sqs:eu-west-1:123456789012:LedgerQueue"}, 0, "LEDGER_QUEUE_URL"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := map[string]string{}
			for k, v := range base {
				env[k] = v
			}
			for k, v := range tc.set {
				env[k] = v
			}
			got, err := LoadEnv(func(k string) string { return env[k] })
			if tc.error != "" {
				if err == nil || !strings.Contains(err.Error(), tc.error) {
					t.Fatalf("expect error saying %q, got %v", tc.error, err)
				}
				return
			}
			if err != nil || got.RetentionDays != tc.days || got.ReceiptsURL != env["RECEIPTS_URL"] || got.LedgerQueueURL != env["LEDGER_QUEUE_URL"] {
				t.Fatalf("expect %d days, RECEIPTS_URL %q and LEDGER_QUEUE_URL %q, got %+v, %v", tc.days, env["RECEIPTS_URL"], env["LEDGER_QUEUE_URL"], got, err)
			}
		})
	}
}
