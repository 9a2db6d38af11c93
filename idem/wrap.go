package idem

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strconv"

	"github.com/aws/aws-lambda-go/events"
)

// WrapOptions configure the handler Wrap returns. Every default is
// written once, on its field, and applied in Wrap.
type WrapOptions[E any] struct {
	// Source names the sender, for metrics and, unless the Store sets a
	// Scope, as the scope of its keys. Defaults to the Lambda function's
	// name ($AWS_LAMBDA_FUNCTION_NAME), or "events" outside Lambda.
	Source string

	// Fingerprint reads what identifies an event's payload: a delivery
	// whose key was claimed with another fingerprint is a *KeyReuseError,
	// one with the same fingerprint a Duplicate, whatever its other bytes.
	// Defaults to, for an events.CloudWatchEvent (events.EventBridgeEvent),
	// a digest of its source, detail-type and detail: not its
	// envelope, whose id and time EventBridge gives each PutEvents afresh,
	// so that a relay's or a producer's resend of one message is a
	// Duplicate; for any other event, the SHA-256 of its JSON.
	Fingerprint func(E) (string, error)

	// Lease, when set, runs h under a lease (Store.ProcessLeased), for
	// handlers that call other services before their writes can be
	// described; an event whose lease another delivery holds returns a
	// *LeaseHeldError, retryable, and makes no call. Defaults to nil: no
	// lease, the claim and the effect in one transaction.
	Lease *LeaseOptions
}

// Wrap makes a Lambda handler of any event type idempotent: an EventBridge
// event, an SNS or S3 notification, a Kinesis record's payload, a direct
// invoke's own struct. Each event is claimed under key(event), an id its
// sender keeps across retries (an EventBridge event's id, an SNS
// MessageId, a request id in a direct invoke's payload), and h's effect
// commits with the claim in one transaction. The handler answers with h's
// response, which is stored with the claim as JSON and decoded for every
// duplicate, so a retried invoke gets the first answer back:
//
//	handle, err := idem.Wrap(store, func(e events.EventBridgeEvent) (string, error) { return e.ID, nil }, ship)
//	lambda.Start(handle)
//
// h describes its effect and performs none, as any Handler: it runs for
// each delivery, and the claim decides which one commits. The event's JSON
// is its payload, and WrapOptions.Fingerprint what identifies it: the same
// key with another event is a *KeyReuseError. A failure is returned as the error, so Lambda retries an
// asynchronous invoke and a direct caller sees why; a *RetryableError may
// have committed, and its retry is then a Duplicate. When h sets
// Effect.Rejected, the bytes it returns must be the JSON of an R: they
// answer this delivery and every duplicate. h must leave Effect.Response
// empty; R is the response.
func Wrap[E, R any](store *Store, key func(E) (string, error), h func(context.Context, E) (R, Effect, error), optFns ...func(*WrapOptions[E])) (func(context.Context, E) (R, error), error) {
	var o WrapOptions[E]
	for _, fn := range optFns {
		fn(&o)
	}
	if o.Fingerprint == nil {
		o.Fingerprint = defaultFingerprint[E]()
	}
	if o.Source == "" {
		o.Source = os.Getenv("AWS_LAMBDA_FUNCTION_NAME")
	}
	if o.Source == "" {
		o.Source = "events"
	}
	switch {
	case store == nil:
		return nil, errors.New("idem: Wrap: nil Store")
	case key == nil:
		return nil, errors.New("idem: Wrap: nil key function")
	case h == nil:
		return nil, errors.New("idem: Wrap: nil handler")
	}
	if err := store.checkSource(o.Source); err != nil {
		return nil, fmt.Errorf("idem: Wrap: WrapOptions.%w", err)
	}
	process := store.Process
	if o.Lease != nil {
		lease := *o.Lease
		if err := store.checkLease(lease); err != nil {
			return nil, fmt.Errorf("idem: Wrap: WrapOptions.Lease: %w", err)
		}
		process = func(ctx context.Context, msg Message, h Handler) (Result, error) {
			return store.ProcessLeased(ctx, msg, h, func(o *LeaseOptions) { *o = lease })
		}
	}
	return func(ctx context.Context, event E) (R, error) {
		var zero R
		msg, err := wrapped(o.Source, key, o.Fingerprint, event)
		if err != nil {
			store.report(ctx, Failed, msg, err)
			return zero, err
		}
		var answer R // this delivery's own, or the replayed one
		msg.Replay = func(stored Record) error { return decodeAnswer(stored.Response, &answer) }
		res, err := process(ctx, msg, func(ctx context.Context, _ Message) (Effect, error) {
			r, eff, err := h(ctx, event)
			if err != nil {
				return Effect{}, err
			}
			if eff.Response != nil {
				return Effect{}, &InvalidError{Reason: "the handler set Effect.Response; Wrap stores its typed response instead"}
			}
			if eff.Response, err = json.Marshal(r); err != nil {
				return Effect{}, fmt.Errorf("encode the response: %w", err)
			}
			if rejected := eff.Rejected; rejected != nil {
				// Checked before the rejection is recorded: a claim whose
				// answer no duplicate could decode would fail them all.
				eff.Rejected = func(rej *RejectedError) ([]byte, error) {
					b, err := rejected(rej)
					if err != nil {
						return nil, err
					}
					var probe R
					if err := decodeAnswer(b, &probe); err != nil {
						return nil, fmt.Errorf("its response is not the JSON of the handler's response type: %w", err)
					}
					return b, nil
				}
			}
			answer = r
			return eff, nil
		})
		if err != nil {
			return zero, err
		}
		if res.Outcome == Rejected {
			// Effect.Rejected's bytes, checked before they were recorded.
			if err := decodeAnswer(res.Record.Response, &answer); err != nil {
				return zero, &InvalidError{Key: res.Record.Key, Reason: "Effect.Rejected's response is not the JSON of the handler's response type: " + err.Error()}
			}
		}
		return answer, nil
	}, nil
}

// wrapped is the message of event: its key, its JSON and its
// fingerprint.
func wrapped[E any](source string, key func(E) (string, error), fingerprint func(E) (string, error), event E) (Message, error) {
	msg := Message{Source: source}
	payload, err := json.Marshal(event)
	if err != nil {
		return msg, &InvalidError{Reason: "the event cannot be encoded as its payload: " + err.Error()}
	}
	msg.Payload = payload
	var eventKey string
	if err := recovered("", "Wrap's key function", func() (err error) { eventKey, err = key(event); return err }); err != nil {
		return msg, fmt.Errorf("idem: the event's key: %w", err)
	}
	if eventKey == "" {
		return msg, &InvalidError{Reason: "the event's key is empty"}
	}
	msg.ID = eventKey
	if fingerprint != nil {
		if err := recovered(eventKey, "WrapOptions.Fingerprint", func() (err error) { msg.Fingerprint, err = fingerprint(event); return err }); err != nil {
			return msg, fmt.Errorf("idem: the event's fingerprint: %w", err)
		}
	}
	return msg, nil
}

// defaultFingerprint is WrapOptions.Fingerprint's default for E: nil (the
// payload's SHA-256) but for EventBridge's events.
func defaultFingerprint[E any]() func(E) (string, error) {
	switch any(*new(E)).(type) {
	case events.CloudWatchEvent:
		return func(e E) (string, error) { return eventFingerprint(any(e).(events.CloudWatchEvent)), nil }
	case *events.CloudWatchEvent:
		return func(e E) (string, error) {
			if p := any(e).(*events.CloudWatchEvent); p != nil {
				return eventFingerprint(*p), nil
			}
			return "", nil
		}
	}
	return nil
}

// eventFingerprint is what identifies an EventBridge (or CloudWatch)
// event's message: its source, detail-type and detail, compacted, without
// the envelope (id, time, account, region), which each PutEvents of the
// same message gives afresh. Wrap's default for such events.
func eventFingerprint(e events.CloudWatchEvent) string {
	var detail bytes.Buffer
	if json.Compact(&detail, e.Detail) != nil {
		detail.Reset()
		detail.Write(e.Detail)
	}
	h := sha256.New()
	for _, part := range [][]byte{[]byte(e.Source), []byte(e.DetailType), detail.Bytes()} {
		h.Write(strconv.AppendInt(nil, int64(len(part)), 10)) // each part with its length: unambiguous
		h.Write([]byte{':'})
		h.Write(part)
	}
	return "eventbridge:" + hex.EncodeToString(h.Sum(nil))
}

// decodeAnswer sets *r to the answer b holds, the zero R when b is empty:
// never merged into what *r held before (json.Unmarshal alone would keep
// fields b leaves out).
func decodeAnswer[R any](b []byte, r *R) error {
	var v R
	if len(b) > 0 {
		if err := json.Unmarshal(b, &v); err != nil {
			return err
		}
	}
	*r = v
	return nil
}
