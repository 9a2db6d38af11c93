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
