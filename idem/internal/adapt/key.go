package adapt

import "strings"

// ReadKey runs an adapter's KeyFunc, fn, named callback in a panic's
// error ("sqsconsumer.Options.Key"), turning an empty key (or one of only
// white space, a producer's bug) into noKey and a panic into a
// *idem.PanicError, so one bad record cannot crash the batch.
// With another error, the key is the one fn read before it failed, if any:
// for the log, never for a claim.
func ReadKey(callback string, noKey error, fn func() (string, error)) (key string, err error) {
	err = Recover("", callback, func() error {
		var kerr error
		key, kerr = fn()
		return kerr
	})
	switch {
	case Panic(err) != nil:
		return "", err
	case err != nil:
		return key, err
	case strings.TrimSpace(key) == "": // only white space is no key either
		return "", noKey
	}
	return key, nil
}

// FirstKey returns the first non-empty key of fns, in order, stopping at
// the first error: a key that is present but unusable is not skipped over.
// A key of only white space is empty, as ReadKey takes it.
func FirstKey[F ~func(R) (string, error), R any](fns []F) F {
	return func(rec R) (string, error) {
		for _, fn := range fns {
			if key, err := fn(rec); strings.TrimSpace(key) != "" || err != nil {
				return key, err
			}
		}
		return "", nil
	}
}
