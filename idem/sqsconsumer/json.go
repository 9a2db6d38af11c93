package sqsconsumer

import (
	"context"

	"github.com/aws/aws-lambda-go/events"

	"github.com/idemkit/kit/idem"
	"github.com/idemkit/kit/idem/internal/adapt"
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
	return adapt.JSONHandler("sqsconsumer: the body", func(rec events.SQSMessage) ([]byte, error) { return []byte(rec.Body), nil }, h)
}
