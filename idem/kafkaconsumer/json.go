package kafkaconsumer

import (
	"context"
	"encoding/base64"
	"fmt"

	"github.com/aws/aws-lambda-go/events"

	"github.com/idemkit/kit/idem"
	"github.com/idemkit/kit/idem/internal/adapt"
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
	return adapt.JSONHandler("kafkaconsumer: the value", value, h)
}

// value is the record's value, decoded from base64.
func value(rec events.KafkaRecord) ([]byte, error) {
	b, err := base64.StdEncoding.DecodeString(rec.Value)
	if err != nil {
		return nil, fmt.Errorf("kafkaconsumer: the value is not base64: %w", err)
	}
	return b, nil
}
