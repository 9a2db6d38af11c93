package adapt

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"unicode/utf8"

	"github.com/idemkit/kit/idem"
)

// JSONHandler is a batch adapter's JSONHandler: a handler that decodes the
// bytes body reads from a record into a T before h runs, nil for a nil h
// (which the adapter's New refuses). what names those bytes in errors
// ("sqsconsumer: the body"); an error of body's fails the record as it is.
func JSONHandler[T, R any](what string, body func(rec R) ([]byte, error), h func(ctx context.Context, v T, rec R) (idem.Effect, error)) func(context.Context, R) (idem.Effect, error) {
	if h == nil {
		return nil
	}
	return func(ctx context.Context, rec R) (idem.Effect, error) {
		b, err := body(rec)
		if err != nil {
			return idem.Effect{}, err
		}
		var v T
		if err := decodeJSON(what, b, &v); err != nil {
			return idem.Effect{}, err
		}
		return h(ctx, v, rec)
	}
}

// decodeJSON refuses invalid UTF-8 first: encoding/json would silently
// turn it into U+FFFD inside strings.
func decodeJSON(what string, b []byte, v any) error {
	if !utf8.Valid(b) {
		return fmt.Errorf("%s is not valid UTF-8", what)
	}
	err := json.Unmarshal(b, v)
	if se := (*json.SyntaxError)(nil); errors.As(err, &se) {
		return fmt.Errorf("%s is not one JSON value: %w", what, err)
	}
	if err != nil {
		return fmt.Errorf("%s does not decode into the handler's type: %w", what, err)
	}
	return nil
}
