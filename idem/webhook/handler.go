package webhook

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/idemkit/kit/idem"
)

// Handler reads a verified delivery and describes its answer and its effect,
// as every handler in the kit does (idem.Wrap's too): the Response answers
// this delivery and, stored with the claim, every redelivery; the
// idem.Effect's Writes commit with the claim. It must not write to
// DynamoDB itself, and must leave Effect.Response empty: the Response is
// the answer (the Receiver refuses one that sets it, with a 500 and
// nothing committed). For Effect.Rejected use Reject. A returned error
// commits nothing: a BadRequest error is a 400, any other error a 500.
type Handler func(ctx context.Context, req Request) (Response, idem.Effect, error)

// JSONHandler is a Handler that decodes the body into a T with
// encoding/json before h runs. The Receiver has already checked that the
// body is one JSON value in valid UTF-8; a body that does not decode into
// a T is a 400 whose detail is the decoder's reason, with nothing
// committed. Like any BadRequest, it is counted as Failed, not Refused:
// the Store sees it inside the claim's processing. Rules encoding/json
// cannot state (a positive amount, a field present) are h's to check, or
// T's own UnmarshalJSON's. A nil h is a nil Handler, which New refuses.
func JSONHandler[T any](h func(ctx context.Context, v T, req Request) (Response, idem.Effect, error)) Handler {
	if h == nil {
		return nil
	}
	return func(ctx context.Context, req Request) (Response, idem.Effect, error) {
		var v T
		if err := json.Unmarshal(req.Body, &v); err != nil {
			return Response{}, idem.Effect{}, BadRequest(fmt.Errorf("the body does not decode into the handler's type: %w", err))
		}
		return h(ctx, v, req)
	}
}

// Reject is idem.Effect.Rejected for a webhook Handler: when a condition
// of the effect's writes fails, the claim commits without the effect and
// the Response fn returns answers this delivery and, stored with the claim
// in the Receiver's format, every redelivery. A status of 0 is 200.
//
//	eff.Rejected = webhook.Reject(func(*idem.RejectedError) webhook.Response {
//		return webhook.Response{Status: 402, Body: []byte("no such account")}
//	})
//
// Without Effect.Rejected a failed condition commits nothing and is a 409.
// Bytes that Reject did not encode are refused: the delivery is a 500,
// nothing committed.
func Reject(fn func(*idem.RejectedError) Response) func(*idem.RejectedError) ([]byte, error) {
	if fn == nil {
		return nil
	}
	return func(rej *idem.RejectedError) ([]byte, error) { return encodeResponse(normalize(fn(rej))), nil }
}
