package adapt_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/idemkit/kit/idem"
	"github.com/idemkit/kit/idem/internal/adapt"
)

// TestJSONHandler: the handler runs on a T decoded from the body; a body
// that cannot be read, is not valid UTF-8, not one JSON value, or not a T
// fails without running it, saying which, and a nil handler stays nil.
func TestJSONHandler(t *testing.T) {
	type credit struct {
		Account string `json:"account"`
		Cents   int64  `json:"cents"`
	}
	var got credit
	h := adapt.JSONHandler("the body", func(rec string) ([]byte, error) {
		if rec == "unreadable" {
			return nil, errors.New("the body is not base64")
		}
		return []byte(rec), nil
	}, func(_ context.Context, c credit, _ string) (idem.Effect, error) {
		got = c
		return idem.Effect{}, nil
	})
	for _, tc := range []struct {
		name, body string
		error      string // "" when the handler runs
	}{
		{"a T", `{"account":"acc-1","cents":5}`, ""},
		{"unreadable", "unreadable", "the body is not base64"},
		{"invalid UTF-8", "{\"account\":\"acc-\xff\",\"cents\":5}", "the body is not valid UTF-8"},
		{"empty", "", "the body is not one JSON value"},
		{"two JSON values", `{}{}`, "the body is not one JSON value"},
		{"not a T", `{"account":"acc-1","cents":"5"}`, "the body does not decode into the handler's type: json: cannot unmarshal string"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got = credit{}
			_, err := h(context.Background(), tc.body)
			switch {
			case tc.error == "" && (err != nil || got != credit{"acc-1", 5}):
				t.Errorf("want the handler run on {acc-1 5}, got %+v, %v", got, err)
			case tc.error != "" && (err == nil || !strings.HasPrefix(err.Error(), tc.error) || got != credit{}):
				t.Errorf("want an error saying %q and no run, got %+v, %v", tc.error, got, err)
			}
		})
	}
	if h := adapt.JSONHandler[credit]("the body", func(rec string) ([]byte, error) { return []byte(rec), nil }, nil); h != nil {
		t.Error("want a nil handler for a nil h")
	}
}
