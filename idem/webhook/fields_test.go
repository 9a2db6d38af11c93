package webhook

import (
	"encoding/json"
	"testing"
)

// viaMap is what topFields stands in for: decode the whole object into a
// map, exact names, the last of repeated keys.
func viaMap(body []byte, names ...string) ([]string, bool) {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(body, &obj); err != nil || obj == nil {
		return nil, false
	}
	out := make([]string, len(names))
	for i, n := range names {
		if raw, ok := obj[n]; ok {
			out[i] = string(raw)
		} else {
			out[i] = "<absent>"
		}
	}
	return out, true
}

func checkFields(t *testing.T, body string) {
	t.Helper()
	names := []string{"id", "type", "created"}
	want, ok := viaMap([]byte(body), names...)
	got, err := topFields([]byte(body), names...)
	if !ok {
		if err == nil && json.Valid([]byte(body)) {
			t.Errorf("%q: the map refuses it, topFields does not", body)
		}
		return
	}
	if err != nil {
		t.Fatalf("%q: %v", body, err)
	}
	for i := range names {
		g := "<absent>"
		if got[i] != nil {
			// RawMessage keeps the value's bytes; compare them compacted, as
			// the map's copy may differ only in the spaces around it.
			var a, b any
			_ = json.Unmarshal(got[i], &a)
			_ = json.Unmarshal([]byte(want[i]), &b)
			ga, _ := json.Marshal(a)
			gb, _ := json.Marshal(b)
			if string(ga) != string(gb) {
				t.Errorf("%q: field %s: want %s, got %s", body, names[i], want[i], got[i])
			}
			continue
		}
		if want[i] != g {
			t.Errorf("%q: field %s: want %s, got absent", body, names[i], want[i])
		}
	}
}

func TestTopFieldsMatchAMap(t *testing.T) {
	for _, body := range []string{
		`{"id":"evt_1","type":"payment_intent.succeeded","created":1795946400}`,
		`{}`, ` { } `, `[]`, `"id"`, `7`, `null`,
		`{"ID":"upper","Id":"mixed"}`,
		`{"id":"first","id":"last"}`,
		`{"data":{"id":"nested","object":{"id":"deeper"}},"id":"top"}`,
		`{"list":[{"id":1},[2,{"id":3}]],"type":"t"}`,
		`{"s":"a \"quoted\" } ] { [ , id","id":"x"}`,
		`{"\u0069d":"escaped key","type":"\u0074"}`,
		`{ "id" : "spaced" , "created" : -12 , "type" : null }`,
		"{\n\t\"id\": \"tabs\",\r\n\"created\": 1e3\n}",
		`{"created":true,"type":{"a":[1,2,{"b":"}"}]},"id":false}`,
	} {
		t.Run(body, func(t *testing.T) { checkFields(t, body) })
	}
}

func FuzzTopFields(f *testing.F) {
	for _, s := range []string{`{"id":"evt_1","type":"x","created":1}`, `{"a":{"id":2},"id":"3"}`, `{"\u0069d":"e"}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, body string) {
		if err := checkJSON([]byte(body)); err != nil {
			return // the Receiver refuses it before any key is read
		}
		checkFields(t, body)
	})
}
