package kafkaconsumer

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"unicode/utf8"

	"github.com/aws/aws-lambda-go/events"

	"github.com/idemkit/kit/idem"
)

// JSONHandler is a Handler that decodes the record's value (base64, as
// Lambda hands it over) into a T with encoding/json before h runs. A value
// that is not one JSON value in valid UTF-8, or does not decode into a T,
// fails that record and the rest of its partition after it, which Lambda
// retries from it (until the event source mapping's retries or record age
// send it to its on-failure destination), with the decoder's reason in
// the logged error; nothing is committed for it, and other partitions go
// on. Rules encoding/json
// cannot state (a positive amount, a field present) are h's to check, or
// T's own UnmarshalJSON's. A nil h is a nil Handler, which New refuses.
func JSONHandler[T any](h func(ctx context.Context, v T, rec events.KafkaRecord) (idem.Effect, error)) Handler {
	if h == nil {
		return nil
	}
	return func(ctx context.Context, rec events.KafkaRecord) (idem.Effect, error) {
		var v T
		if err := decodeJSON(rec.Value, &v); err != nil {
			return idem.Effect{}, err
		}
		return h(ctx, v, rec)
	}
}

// decodeJSON refuses invalid UTF-8 first: encoding/json would silently
// turn it into U+FFFD inside strings.
func decodeJSON(value string, v any) error {
	b, err := base64.StdEncoding.DecodeString(value)
	if err != nil {
		return fmt.Errorf("kafkaconsumer: the value is not base64: %w", err)
	}
	if !utf8.Valid(b) {
		return errors.New("kafkaconsumer: the value is not valid UTF-8")
	}
	err = json.Unmarshal(b, v)
	if se := (*json.SyntaxError)(nil); errors.As(err, &se) {
		return fmt.Errorf("kafkaconsumer: the value is not one JSON value: %w", err)
	}
	if err != nil {
		return fmt.Errorf("kafkaconsumer: the value does not decode into the handler's type: %w", err)
	}
	return nil
}
