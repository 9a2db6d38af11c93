package localstack

import (
	"strings"
	"testing"
)

func TestFilterMatch(t *testing.T) {
	outbox := `{"eventName":"INSERT","dynamodb":{"Keys":{"pk":{"S":"o#1"}},"NewImage":{"kind":{"S":"outbox"},"n":{"N":"5"},"tags":{"SS":["a","b"]}}}}`
	other := `{"eventName":"INSERT","dynamodb":{"Keys":{"pk":{"S":"c#1"}},"NewImage":{"kind":{"S":"claim"}}}}`
	remove := `{"eventName":"REMOVE","dynamodb":{"Keys":{"pk":{"S":"o#1"}},"OldImage":{"kind":{"S":"outbox"}}}}`
	typed := `{"eventName":"MODIFY","size":12,"ok":true,"none":null}`
	relay := `{"eventName":["INSERT","MODIFY"],"dynamodb":{"NewImage":{"kind":{"S":["outbox"]}}}}`
	for _, tc := range []struct {
		name, pattern, record string
		want                  bool
	}{
		{"nested exact", relay, outbox, true},
		{"nested other value", relay, other, false},
		{"event name not listed", relay, remove, false},
		{"missing nested object", `{"dynamodb":{"NewImage":{"kind":{"S":["outbox"]}}}}`, remove, false},
		{"top-level only", `{"eventName":["REMOVE"]}`, remove, true},
		{"empty pattern matches all", `{}`, other, true},
		{"prefix", `{"dynamodb":{"Keys":{"pk":{"S":[{"prefix":"o#"}]}}}}`, outbox, true},
		{"prefix no", `{"dynamodb":{"Keys":{"pk":{"S":[{"prefix":"o#"}]}}}}`, other, false},
		{"suffix", `{"dynamodb":{"Keys":{"pk":{"S":[{"suffix":"#1"}]}}}}`, other, true},
		{"exists", `{"dynamodb":{"NewImage":[{"exists":true}]}}`, outbox, true},
		{"exists false", `{"dynamodb":{"NewImage":[{"exists":false}]}}`, remove, true},
		{"exists false present", `{"dynamodb":{"NewImage":[{"exists":false}]}}`, outbox, false},
		{"anything-but", `{"eventName":[{"anything-but":["REMOVE"]}]}`, outbox, true},
		{"anything-but no", `{"eventName":[{"anything-but":"REMOVE"}]}`, remove, false},
		{"array field any element", `{"dynamodb":{"NewImage":{"tags":{"SS":["b"]}}}}`, outbox, true},
		{"a DynamoDB number is a string", `{"dynamodb":{"NewImage":{"n":{"N":[5]}}}}`, outbox, false},
		{"a DynamoDB number as a string", `{"dynamodb":{"NewImage":{"n":{"N":["5"]}}}}`, outbox, true},
		{"number", `{"size":[12]}`, typed, true},
		{"numeric range", `{"size":[{"numeric":[">",10,"<=",12]}]}`, typed, true},
		{"numeric out of range", `{"size":[{"numeric":[">",12]}]}`, typed, false},
		{"bool", `{"ok":[true]}`, typed, true},
		{"null", `{"none":[null]}`, typed, true},
		{"string is not a number", `{"size":["12"]}`, typed, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, err := ParseFilter(tc.pattern)
			if err != nil {
				t.Fatal(err)
			}
			rec, err := decodeJSON([]byte(tc.record))
			if err != nil {
				t.Fatal(err)
			}
			if got := f.Match(rec.(map[string]any)); got != tc.want {
				t.Fatalf("expect %v, got %v", tc.want, got)
			}
		})
	}
}

func TestFilterMatchAny(t *testing.T) {
	rec := map[string]any{"eventName": "REMOVE"}
	insert, _ := ParseFilter(`{"eventName":["INSERT"]}`)
	remove, _ := ParseFilter(`{"eventName":["REMOVE"]}`)
	for _, tc := range []struct {
		name    string
		filters []*Filter
		want    bool
	}{
		{"no filter: all pass", nil, true},
		{"none matches", []*Filter{insert}, false},
		{"one of two matches", []*Filter{insert, remove}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := matchAny(tc.filters, rec); got != tc.want {
				t.Fatalf("expect %v, got %v", tc.want, got)
			}
		})
	}
}

func TestParseFilterErrors(t *testing.T) {
	for _, tc := range []struct{ name, pattern, err string }{
		{"not json", `{"a":`, "unexpected EOF"},
		{"not an object", `["a"]`, "want a JSON object"},
		{"scalar value", `{"eventName":"INSERT"}`, "want an object or an array"},
		{"nested scalar", `{"dynamodb":{"Keys":1}}`, "dynamodb.Keys"},
		{"unknown operator", `{"a":[{"wildcard":"x*"}]}`, "not emulated locally"},
		{"two operators", `{"a":[{"prefix":"x","suffix":"y"}]}`, "one operator"},
		{"bad numeric", `{"a":[{"numeric":[">"]}]}`, "numeric"},
		{"bad exists", `{"a":[{"exists":"yes"}]}`, "exists"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseFilter(tc.pattern)
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Fatalf("expect an error saying %q, got %v", tc.err, err)
			}
		})
	}
}
