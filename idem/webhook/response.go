package webhook

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/idemkit/kit/idem"
	"github.com/idemkit/kit/idem/internal/wire"
)

// Response is an HTTP answer.
type Response struct {
	Status  int // the status code; 0 means 200
	Headers map[string]string
	Body    []byte
}

// JSON is a response with v as its JSON body.
func JSON(status int, v any) (Response, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return Response{}, err
	}
	return Response{Status: status, Headers: map[string]string{"Content-Type": "application/json"}, Body: b}, nil
}

// badRequestError is a Handler's verdict that the payload is malformed.
type badRequestError struct{ Err error }

func (e *badRequestError) Error() string { return "webhook: bad request: " + e.Err.Error() }
func (e *badRequestError) Unwrap() error { return e.Err }

// BadRequest marks err as the payload's fault, for a Handler to return: a
// 400 whose detail is err's text. Nothing is recorded, so the sender may
// send the corrected payload under the same key.
func BadRequest(err error) error { return &badRequestError{Err: err} }

// problem is an RFC 9457 problem detail: type "about:blank", so the title
// is the status's name and the detail says what went wrong.
func problem(status int, detail string) Response {
	b, _ := json.Marshal(struct {
		Type   string `json:"type"`
		Title  string `json:"title"`
		Status int    `json:"status"`
		Detail string `json:"detail"`
	}{"about:blank", http.StatusText(status), status, detail})
	return Response{Status: status, Headers: map[string]string{"Content-Type": "application/problem+json"}, Body: b}
}

// unavailable is the 503 of a transient store failure: the sender retries.
func unavailable(retryAfter time.Duration) Response {
	r := problem(http.StatusServiceUnavailable, "the delivery could not be confirmed just now; retry later: a retry is applied at most once")
	r.Headers["Retry-After"] = strconv.FormatInt(int64((retryAfter+time.Second-1)/time.Second), 10)
	return r
}

// inFlight is the 409 for a delivery whose key is in flight, under a lease
// that ends in remaining or in this process: retry after remaining (at
// least a second).
func inFlight(remaining time.Duration) Response {
	r := problem(http.StatusConflict, "a request with this idempotency key is still being processed; retry after it: a retry is applied at most once")
	r.Headers["Retry-After"] = strconv.FormatInt(max(1, int64((remaining+time.Second-1)/time.Second)), 10)
	return r
}

// encodeResponse is r as a claim stores it (wire.EncodeResponse's format,
// which the idem command reads too).
func encodeResponse(r Response) []byte { return wire.EncodeResponse(r.Status, r.Headers, r.Body) }

// decodeResponse reads what encodeResponse wrote, and refuses anything else
// without panicking: a record may have been written by another adapter
// sharing the scope.
func decodeResponse(b []byte) (Response, error) {
	status, headers, body, err := wire.DecodeResponse(b)
	if err != nil {
		return Response{}, errStoredResponse
	}
	return Response{Status: status, Headers: headers, Body: body}, nil
}

var errStoredResponse = errors.New("webhook: the stored response is not in this adapter's format")

// nothingDone is the 500's detail when Process is known to have committed
// nothing for this delivery.
const nothingDone = "the delivery could not be processed; nothing was applied or recorded"

// answerError maps what Process returned to a status. Server-side causes get
// a generic detail: the Store has logged the error itself. A detail says
// nothing was applied only where Process guarantees it; a RetryableError
// may follow a commit whose answer was lost, which the sender's retry then
// finds as a Duplicate.
func (r *Receiver) answerError(key string, err error) Response {
	var (
		bad     *badRequestError
		replay  *idem.ReplayError
		handler *idem.HandlerError
		panicky *idem.PanicError
		store   *idem.StoreError
		invalid *idem.InvalidError
		held    *idem.LeaseHeldError
		waited  *idem.InFlightError
		stale   *idem.StaleLeaseError
	)
	switch {
	case errors.As(err, &bad):
		return problem(http.StatusBadRequest, bad.Err.Error())
	case errors.Is(err, idem.ErrKeyReuse):
		return problem(http.StatusUnprocessableEntity, fmt.Sprintf("the idempotency key %q was used before with a different payload; send a new key for a new request", key))
	case errors.As(err, &held):
		return inFlight(held.Until.Sub(r.proc.Now()))
	case errors.As(err, &waited):
		return inFlight(waited.RetryAfter)
	case errors.As(err, &stale):
		return problem(http.StatusInternalServerError, "a delivery of this key started long ago and never finished; it needs an operator, and nothing was done now")
	case errors.Is(err, idem.ErrRetryable):
		return unavailable(r.opts.RetryAfter)
	case errors.Is(err, idem.ErrRejected):
		return problem(http.StatusConflict, "a condition of the effect failed; nothing was applied or recorded")
	case errors.As(err, &replay):
		return problem(http.StatusInternalServerError, "this key was processed before, but its stored response cannot be replayed")
	case errors.As(err, &handler), errors.As(err, &panicky), errors.As(err, &store), errors.As(err, &invalid),
		errors.Is(err, idem.ErrTableNotFound): // the function's configuration: its log says which table
		return problem(http.StatusInternalServerError, nothingDone)
	}
	return problem(http.StatusInternalServerError, "the delivery could not be processed")
}
