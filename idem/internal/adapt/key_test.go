package adapt_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/idemkit/kit/idem"
	"github.com/idemkit/kit/idem/internal/adapt"
	"github.com/idemkit/kit/idem/internal/seam"
)

var errNoKey = errors.New("no idempotency key")

func TestReadKey(t *testing.T) {
	unusable := errors.New("unusable")
	for _, tc := range []struct {
		name    string
		fn      func() (string, error)
		key     string
		err     error
		message string // of err
	}{
		{"a key", func() (string, error) { return "k", nil }, "k", nil, ""},
		{"no key", func() (string, error) { return "", nil }, "", errNoKey, "no idempotency key"},
		{"a key of only white space", func() (string, error) { return " \t\n ", nil }, "", errNoKey, "no idempotency key"},
		{"an error, with the key read before it", func() (string, error) { return "k", unusable }, "k", unusable, "unusable"},
		{"a panic", func() (string, error) { panic("no key") }, "", nil, "Options.Key panicked: no key"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			key, err := adapt.ReadKey("Options.Key", errNoKey, tc.fn)
			if key != tc.key {
				t.Errorf("key: want %q, got %q", tc.key, key)
			}
			switch {
			case tc.message == "" && err != nil:
				t.Errorf("want no error, got %v", err)
			case tc.message != "" && (err == nil || !strings.Contains(err.Error(), tc.message)):
				t.Errorf("want an error saying %q, got %v", tc.message, err)
			case tc.err != nil && !errors.Is(err, tc.err):
				t.Errorf("want an error that is %v, got %v", tc.err, err)
			}
			if tc.name == "a panic" && adapt.Panic(err) == nil {
				t.Errorf("want a *idem.PanicError, got %T", err)
			}
		})
	}
}

// TestKeyFailuresAreReported: a record that cannot be a message, whose
// key cannot be read, or that names no Source fails alone, reported
// Failed with its name and reason, and nothing is claimed for it. Its log
// line names the key read before it failed, unless it has no Source: then
// the key would read as one of the shared default scope.
func TestKeyFailuresAreReported(t *testing.T) {
	for _, mode := range modes {
		t.Run(mode.name, func(t *testing.T) {
			e := newEnv(t)
			var o laneOptions
			mode.opt(&o)
			r, err := adapt.NewLaneRunner(e.store, "adapt", o, adapt.Records[testRecord, testRecord]{
				Record: func(rec testRecord) testRecord { return rec },
				NoKey:  errNoKey,
				Handle: func(ctx context.Context, rec testRecord) (idem.Effect, error) { return e.credit(ctx, rec.id) },
				Message: func(rec testRecord) (idem.Message, error) {
					switch rec.id {
					case "no-message":
						return idem.Message{Source: "lanes"}, errors.New("the value is not base64")
					case "no-source", "no-source-nor-key":
						return idem.Message{}, nil
					}
					return idem.Message{Source: "lanes", Payload: []byte(rec.id)}, nil
				},
				DefaultKey: func(rec testRecord) (string, error) {
					switch rec.id {
					case "no-key", "no-source-nor-key":
						return "read-before", errors.New("unusable key")
					case "no-message":
						t.Error("the key of a record that is no message was read")
					}
					return rec.id, nil
				},
				NoSource: errors.New("the record names no source"),
				Name:     func(rec testRecord) string { return "<" + rec.id + ">" },
				Stopped:  func(_, after testRecord) error { return fmt.Errorf("%w (after %s)", errStopped, after.id) },
				Span:     func(rec testRecord) seam.Span { return seam.Span{Name: rec.id} },
			})
			if err != nil {
				t.Fatal(err)
			}
			recs := []testRecord{{"ok", 0}, {"no-message", 1}, {"no-key", 2}, {"no-source", 3}, {"no-source-nor-key", 4}}
			var failed []string
			for i, err := range r.Run(context.Background(), recs, lanes(recs)) {
				if err != nil {
					failed = append(failed, recs[i].id)
				}
			}
			checkFailed(t, sorted(failed), "no-message", "no-key", "no-source", "no-source-nor-key")
			e.checkCredited(t, "ok")
			want := map[string]struct{ id, error string }{ // by the error's record name
				"no-message":        {"", "record <no-message>: the value is not base64"},
				"no-key":            {"read-before", "record <no-key>: unusable key"},
				"no-source":         {"", "record <no-source>: the record names no source"},
				"no-source-nor-key": {"", "record <no-source-nor-key>: unusable key"},
			}
			var got []string
			for l := range strings.Lines(e.logs.String()) {
				var line struct{ Outcome, ID, Error string }
				if json.Unmarshal([]byte(l), &line) != nil || line.Outcome != string(idem.Failed) {
					continue
				}
				name := strings.TrimPrefix(strings.SplitN(line.Error, ">", 2)[0], "record <")
				got = append(got, name)
				if w := want[name]; line.ID != w.id || line.Error != w.error {
					t.Errorf("%s: want id %q and error %q, got %q and %q", name, w.id, w.error, line.ID, line.Error)
				}
			}
			if len(got) != len(want) {
				t.Errorf("Failed log lines: want one for each of %d records, got %q", len(want), got)
			}
		})
	}
}
