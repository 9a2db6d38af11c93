package batch_test

import (
	"errors"
	"testing"

	"github.com/idemkit/kit/idem/batch"
)

func TestFirstKey(t *testing.T) {
	type keyFunc = batch.KeyFunc[string]
	unusable := errors.New("unusable")
	none := keyFunc(func(string) (string, error) { return "", nil })
	bad := keyFunc(func(string) (string, error) { return "", unusable })
	echo := keyFunc(func(s string) (string, error) { return s, nil })
	blank := keyFunc(func(string) (string, error) { return "   ", nil })
	partial := keyFunc(func(string) (string, error) { return "read-before", unusable })
	for _, tc := range []struct {
		name string
		fns  []keyFunc
		key  string
		err  error
	}{
		{"none", nil, "", nil},
		{"the first non-empty", []keyFunc{none, echo, bad}, "rec", nil},
		{"an error before a key", []keyFunc{none, bad, echo}, "", unusable},
		{"an error with the key read before it", []keyFunc{partial, echo}, "read-before", unusable},
		{"no key of any kind", []keyFunc{none, none}, "", nil},
		{"a key of only spaces is none", []keyFunc{blank, echo}, "rec", nil},
		{"only spaces, and no other key", []keyFunc{blank}, "", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if key, err := batch.FirstKey(tc.fns...)("rec"); key != tc.key || !errors.Is(err, tc.err) {
				t.Errorf("want %q, %v; got %q, %v", tc.key, tc.err, key, err)
			}
		})
	}
}
