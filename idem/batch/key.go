package batch

import "strings"

// A KeyFunc returns a record's idempotency key: "" when the record has no
// key of the kind it reads, an error when it has one that cannot be used.
// A key returned with an error is not claimed: it names the failed record
// in the log line, as when a function reads the key and then finds the
// record's body it cannot decode.
type KeyFunc[R any] func(rec R) (string, error)

// FirstKey returns the first non-empty key of fns, in order, stopping at
// the first error: a key that is present but unusable is not skipped over.
// A key of only white space is empty, as Options.Key's is.
func FirstKey[R any](fns ...KeyFunc[R]) KeyFunc[R] {
	return func(rec R) (string, error) {
		for _, fn := range fns {
			if key, err := fn(rec); strings.TrimSpace(key) != "" || err != nil {
				return key, err
			}
		}
		return "", nil
	}
}
