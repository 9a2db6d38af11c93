package webhook

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"

	"github.com/idemkit/kit/idem"
	"github.com/idemkit/kit/idem/internal/adapt"
	"github.com/idemkit/kit/idem/internal/seam"
)

// Receiver turns HTTP deliveries (API Gateway's events, an Application
// Load Balancer's, net/http requests) into exactly-once effects, each
// answered with its first response. It is safe for concurrent use; build it
// once, outside the Lambda handler.
type Receiver struct {
	proc    *adapt.Processor
	handler Handler
	opts    Options
	byRoute bool // Options.Source was left at its default: a Mux or ServeMux scopes keys by route
}

// New returns a Receiver that claims deliveries in store and runs h for
// each first delivery.
func New(store *idem.Store, h Handler, optFns ...func(*Options)) (*Receiver, error) {
	var o Options
	for _, fn := range optFns {
		fn(&o)
	}
	byRoute := o.Source == ""
	o.setDefaults()
	switch {
	case h == nil:
		return nil, errors.New("webhook: New: nil Handler")
	case o.MaxBodyBytes < 0 || o.RetryAfter < 0 || o.InFlightWait < 0:
		return nil, errors.New("webhook: New: MaxBodyBytes, RetryAfter and InFlightWait must not be negative")
	}
	proc, err := adapt.New(store, "Options", o.Source, o.Lease)
	if err != nil {
		return nil, fmt.Errorf("webhook: New: %w", err)
	}
	if err := checkSecrets(o.Verifier); err != nil {
		return nil, fmt.Errorf("webhook: New: %w", err)
	}
	r := &Receiver{proc: proc, handler: h, opts: o, byRoute: byRoute}
	return r, nil
}

// source is a delivery's Source: Options.Source, or, for a Receiver left at
// the default and served by a Mux or an http.ServeMux, the route that
// matched ("POST /charges"), so that one key sent to two routes is two
// requests, as the
// IETF idempotency-key draft scopes a key to its resource. serve refuses a
// route the Store cannot take as a Source.
func (r *Receiver) source(route string) string {
	if r.byRoute && route != "" {
		return route
	}
	return r.opts.Source
}

// failure is a delivery refused before its claim: the status and the detail
// sent back, and the cause that is logged.
type failure struct {
	status int
	detail string
	err    error
}

func (f *failure) Error() string { return fmt.Sprintf("webhook: %d: %s", f.status, f.detail) }
func (f *failure) Unwrap() error { return f.err }

// serve runs the pipeline every entry enters: the route, the body (its
// size, its encoding), then admit's checks, then the claim and effect.
// Each step reads only what the previous ones vouched for.
func (r *Receiver) serve(ctx context.Context, req Request, read body) Response {
	if req.Source != r.opts.Source {
		if err := r.proc.CheckSource(req.Source); err != nil {
			// A route the Mux was given that cannot scope keys: the
			// function's fault, not the sender's.
			route := req.Source
			req.Source = r.opts.Source
			return r.fail(ctx, req, fmt.Errorf("webhook: the route %q cannot be the Source of a Receiver left at its default: %w; set Options.Source", route, err))
		}
	}
	raw, refused := read(r.opts.MaxBodyBytes)
	if refused != nil {
		return r.refuse(ctx, req, refused.status, refused.detail, refused.err)
	}
	req.Body = raw
	fingerprint, err := r.admit(&req)
	if pe := adapt.Panic(err); pe != nil {
		return r.fail(ctx, req, pe)
	}
	if f := (*failure)(nil); errors.As(err, &f) {
		return r.refuse(ctx, req, f.status, f.detail, f.err)
	}
	return r.process(ctx, req, fingerprint)
}

// A body is how an entry hands over a delivery's body: the raw bytes, at
// most limit of them, or why they are refused.
type body func(limit int) ([]byte, *failure)

// eventBody is an event's body: text, or base64 when isBase64.
func eventBody(s string, isBase64 bool) body {
	return func(limit int) ([]byte, *failure) {
		switch {
		case isBase64 && len(s) > base64.StdEncoding.EncodedLen(limit), !isBase64 && len(s) > limit:
			return nil, tooLarge(limit)
		case !isBase64:
			return []byte(s), nil
		}
		raw, err := base64.StdEncoding.DecodeString(s)
		if err != nil {
			return nil, &failure{http.StatusBadRequest, "the body is marked base64 but is not valid base64", err}
		}
		if len(raw) > limit {
			return nil, tooLarge(limit)
		}
		return raw, nil
	}
}

func tooLarge(limit int) *failure {
	return &failure{http.StatusRequestEntityTooLarge, fmt.Sprintf("the body is larger than %d bytes", limit), nil}
}

// admit runs the checks before the claim, in order: the signature over
// the raw body, the body's JSON, the key, the fingerprint. It sets
// req.Key and returns the fingerprint, or a *failure to refuse, or the
// *idem.PanicError of a callback: the callbacks run under adapt.Recover,
// so a panic fails this delivery, never the process.
func (r *Receiver) admit(req *Request) (string, error) {
	if err := r.verify(*req); err != nil {
		return "", err
	}
	if err := checkJSON(req.Body); err != nil {
		req.Key = r.headerKey(*req) // logged under the key its headers give
		return "", &failure{http.StatusBadRequest, err.Error(), err}
	}
	key, err := r.key(*req)
	if err != nil {
		return "", err
	}
	req.Key = key
	return r.fingerprint(*req)
}

// verify checks the signature with Options.Verifier, if one is set.
func (r *Receiver) verify(req Request) error {
	v := r.opts.Verifier
	if v == nil {
		return nil
	}
	err := adapt.Recover("", "webhook.Options.Verifier", func() error { return v.Verify(req.Header, req.Body) })
	if err == nil || adapt.Panic(err) != nil {
		return err
	}
	detail := errText(err)
	if se := (*signatureError)(nil); errors.As(err, &se) {
		detail = "signature not verified: " + se.reason
	}
	return &failure{http.StatusUnauthorized, detail, err}
}

// key reads and checks the delivery's key with Options.Key.
func (r *Receiver) key(req Request) (string, error) {
	var key string
	err := adapt.Recover("", "webhook.Options.Key", func() (err error) {
		key, err = r.opts.Key(req.Header, req.Body)
		return err
	})
	if adapt.Panic(err) != nil {
		return "", err
	}
	if err == nil {
		err = checkKey(key)
	}
	if err != nil {
		return "", &failure{http.StatusBadRequest, errText(err), err}
	}
	return key, nil
}

// fingerprint reads the payload's fingerprint with Options.Fingerprint,
// or "" (the body's SHA-256) when none is set.
func (r *Receiver) fingerprint(req Request) (string, error) {
	fp := r.opts.Fingerprint
	if fp == nil {
		return "", nil
	}
	var fingerprint string
	err := adapt.Recover("", "webhook.Options.Fingerprint", func() (err error) {
		fingerprint, err = fp(req)
		return err
	})
	if err != nil && adapt.Panic(err) == nil {
		return "", &failure{http.StatusBadRequest, "the payload's fingerprint: " + errText(err), err}
	}
	return fingerprint, err
}

// headerKey is the key the headers alone give (Options.Key read with an
// empty JSON object for the body, which no key function may read unless
// it is JSON), so that a delivery refused for its body is logged under its
// key; "" when it needs the body. Never claimed.
func (r *Receiver) headerKey(req Request) string {
	var key string
	err := adapt.Recover("", "webhook.Options.Key", func() (err error) {
		key, err = r.opts.Key(req.Header, []byte("{}"))
		return err
	})
	if err != nil || checkKey(key) != nil {
		return ""
	}
	return key
}

// errText is the text of an error a user's callback returned: one whose
// Error method panics must not take the process down either.
func errText(err error) (s string) {
	defer func() {
		if recover() != nil {
			s = fmt.Sprintf("%T (its Error method panicked)", err)
		}
	}()
	return err.Error()
}

// refuse answers a delivery refused before its claim, and logs and counts
// it as Refused: the sender's fault, which must not raise the Failed alarm.
func (r *Receiver) refuse(ctx context.Context, req Request, status int, detail string, err error) Response {
	r.proc.Refuse(ctx, idem.Message{ID: req.Key, Source: req.Source, Payload: req.Body}, &failure{status, detail, err})
	return problem(status, detail)
}

// fail answers a delivery that failed before its claim through no fault of
// the sender, a callback that panicked: a 500, logged and counted as Failed.
func (r *Receiver) fail(ctx context.Context, req Request, err error) Response {
	r.proc.Fail(ctx, idem.Message{ID: req.Key, Source: req.Source, Payload: req.Body}, err)
	return problem(http.StatusInternalServerError, nothingDone)
}

// process claims the delivery and commits its effect, and answers with the
// response of the delivery that committed first.
func (r *Receiver) process(ctx context.Context, req Request, fingerprint string) Response {
	var answer, stored Response // this delivery's response, when it commits; a Duplicate's
	msg := idem.Message{ID: req.Key, Source: req.Source, Payload: req.Body, Fingerprint: fingerprint,
		// Decoded inside Process, before the outcome is counted: a response
		// this adapter cannot read (another adapter's, sharing the scope)
		// makes the delivery one Failed, not a Duplicate and a Failed.
		Replay: func(rec idem.Record) (err error) {
			stored, err = decodeResponse(rec.Response)
			return err
		}}
	if r.proc.Tracing(ctx) {
		ctx = seam.WithSpan(ctx, span(req))
	}
	ctx = seam.WithWait(ctx, r.inFlightWait(ctx, req.start))
	res, err := r.proc.Process(ctx, msg, func(ctx context.Context, _ idem.Message) (idem.Effect, error) {
		resp, eff, err := r.handler(ctx, req)
		if err != nil {
			return idem.Effect{}, err
		}
		if len(eff.Response) != 0 {
			return idem.Effect{}, &idem.InvalidError{Reason: "the webhook Handler set idem.Effect.Response; its answer is the Response it returns"}
		}
		answer = normalize(resp)
		eff.Response = encodeResponse(answer)
		if rejected := eff.Rejected; rejected != nil {
			// Bytes this adapter cannot replay fail the delivery before
			// anything is recorded.
			eff.Rejected = func(rej *idem.RejectedError) ([]byte, error) {
				b, err := rejected(rej)
				if err != nil {
					return nil, err
				}
				resp, err := decodeResponse(b)
				if err != nil {
					return nil, errNotRejectResponse
				}
				answer = resp
				return b, nil
			}
		}
		return eff, nil
	})
	if err != nil {
		return r.answerError(req.Key, err)
	}
	if res.Outcome != idem.Duplicate {
		return answer
	}
	stored.Headers["Idempotent-Replayed"] = "true"
	return stored
}

// errNotRejectResponse is why a rejection's bytes are refused.
var errNotRejectResponse = errors.New("webhook: Effect.Rejected returned bytes that are not a webhook Response; build it with webhook.Reject")

func normalize(r Response) Response {
	if r.Status == 0 {
		r.Status = http.StatusOK
	}
	return r
}
