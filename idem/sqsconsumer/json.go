package sqsconsumer

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"unicode/utf8"

	"github.com/aws/aws-lambda-go/events"

	"github.com/idemkit/kit/idem"
)

// JSONHandler is a Handler that decodes the record's body into a T with
// encoding/json before h runs. A body that is not one JSON value in valid
// UTF-8, or does not decode into a T, fails that record alone (it is named
// in batchItemFailures, and redelivered until the queue's maxReceiveCount
// sends it to the dead-letter queue), with the decoder's reason in the
// logged error; nothing is committed. Rules encoding/json cannot state (a
// positive amount, a field present) are h's to check, or T's own
// UnmarshalJSON's. A nil h is a nil Handler, which New refuses.
func JSONHandler[T any](h func(ctx context.Context, v T, rec events.SQSMessage) (idem.Effect, error)) Handler {
	if h == nil {
		return nil
	}
	return func(ctx context.Context, rec events.SQSMessage) (idem.Effect, error) {
		var v T
		if err := decodeJSON(rec.Body, &v); err != nil {
			return idem.Effect{}, err
		}
		return h(ctx, v, rec)
	}
}

// decodeJSON refuses invalid UTF-8 first: encoding/json would silently
// turn it into U+FFFD inside strings.
func decodeJSON(body string, v any) error {
	if !utf8.ValidString(body) {
		return errors.New("sqsconsumer: the body is not valid UTF-8")
	}
	err := json.Unmarshal([]byte(body), v)
	if se := (*json.SyntaxError)(nil); errors.As(err, &se) {
		return fmt.Errorf("sqsconsumer: the body is not one JSON value: %w", err)
	}
	if err != nil {
		return fmt.Errorf("sqsconsumer: the body does not decode into the handler's type: %w", err)
	}
	return nil
}
