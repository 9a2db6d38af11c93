package webhook

import (
	"time"

	"github.com/idemkit/kit/idem"
)

// Options configure a Receiver. Every default is written once, on its
// field, and applied in New.
type Options struct {
	// Source names the sender: the claim records' Source, the metrics'
	// dimension and, unless the Store sets a Scope, the namespace of its
	// keys. It must be a dimension value CloudWatch takes, 1 to 1,024
	// printable ASCII characters not all spaces, and hold no "#" unless the
	// Store sets a Scope; New refuses another.
	// Defaults to "webhook", or, served by a Mux or an http.ServeMux, the
	// route the delivery matched ("POST /charges"; a ServeMux pattern
	// without a method takes the request's): a key is scoped to its
	// route. Set it to share one scope between routes, such as "webhook",
	// the scope a Receiver behind an http.ServeMux had before routes
	// scoped its keys.
	Source string

	// Verifier authenticates each delivery over its raw body before anything
	// else reads it; any error it returns is a 401. Defaults to nil, which
	// accepts unsigned deliveries: set one for every sender that signs.
	Verifier Verifier

	// Key reads a delivery's idempotency key from its headers or body, the
	// id the sender keeps stable across redeliveries; an error, or a key
	// that is empty, longer than 255 bytes or not printable ASCII, is a
	// 400. Defaults to IdempotencyKey(""): the Idempotency-Key header.
	Key func(h Header, body []byte) (string, error)

	// Fingerprint reads what identifies a keyed delivery's payload. A
	// delivery whose key was claimed with another fingerprint is a 422; one
	// with the same fingerprint is answered with the stored response, even
	// when its bytes changed (logged at INFO with both bodies' SHA-256). An
	// error is a 400. The Stripe and GitHub presets set the provider's
	// stable identity of the event, since a provider may render each
	// attempt afresh; req.Key is set, and returning "" leaves the body's
	// SHA-256 as the fingerprint. A claim stored with
	// the body's SHA-256 (before a fingerprint was set) still matches only
	// the same bytes. Defaults to nil: the
	// SHA-256 of the whole body, right for keys the client chooses
	// (Idempotency-Key), reused with another body only by mistake.
	Fingerprint func(req Request) (string, error)

	// MaxBodyBytes bounds the body, after base64 decoding; a larger body is
	// a 413. Defaults to 262,144 (256 KiB).
	MaxBodyBytes int

	// RetryAfter is the Retry-After of the 503 sent when the store failed
	// transiently, rounded up to whole seconds. Defaults to 1 second.
	RetryAfter time.Duration

	// InFlightWait is how long a delivery waits for another delivery of
	// its key running in this process (several invokes in one process, on
	// Lambda Managed Instances; concurrent requests to a server) to finish,
	// and is then answered with its response, replayed. Past the wait the
	// delivery is answered 409 Conflict with a Retry-After of a second,
	// as the IETF idempotency-key draft answers a request in flight, having
	// done nothing; its retry gets the stored answer. The wait ends a
	// second before API Gateway's 29-second integration limit, counted from
	// the request's start (the event's requestTimeEpoch or timeEpoch; the
	// entry's start for an ALB or net/http request), and a second before
	// the context's deadline, so the caller is answered, never timed out.
	// A delivery in flight in another environment holds a lease (Lease)
	// and is answered 409 at once whatever this says. Defaults to 0: the
	// 409 at once.
	InFlightWait time.Duration

	// Lease, when set, runs the Handler under a lease
	// (idem.Store.ProcessLeased), for handlers that call other services
	// before their writes can be described: the claim is taken first, and
	// the Handler calls out with idem.LeaseFromContext's key as the
	// Idempotency-Key. A delivery that meets a live lease (the same key in
	// flight in another environment) is answered 409 Conflict with a
	// Retry-After of the lease's remaining seconds, as the IETF
	// idempotency-key draft answers a request still in flight; nothing is
	// called. In this process it is answered as InFlightWait says. Defaults to nil: no
	// lease, the claim and the effect in one transaction.
	Lease *idem.LeaseOptions
}

func (o *Options) setDefaults() {
	if o.Source == "" {
		o.Source = "webhook"
	}
	if o.Key == nil {
		o.Key = IdempotencyKey("")
	}
	if o.MaxBodyBytes == 0 {
		o.MaxBodyBytes = 256 << 10
	}
	if o.RetryAfter == 0 {
		o.RetryAfter = time.Second
	}
}

// A Verifier authenticates a delivery: it returns nil when the headers carry
// a valid signature of body, the raw bytes as the sender sent them.
type Verifier interface {
	Verify(h Header, body []byte) error
}

// Request is a verified delivery with its key.
type Request struct {
	Method string // the HTTP method
	Path   string // the raw path (payload v2, net/http's escaped path) or the path (v1, ALB)
	Header Header
	// Body is the raw body, base64-decoded when API Gateway encoded it: the
	// payload, whose fingerprint (Options.Fingerprint) tells a redelivery
	// from a reuse of the key.
	Body   []byte
	Key    string // the idempotency key, validated
	Source string // Options.Source

	route string    // the route's template (OpenTelemetry's http.route), when the entry names one
	start time.Time // when the request started, as its entry knows it: InFlightWait counts API Gateway's limit from it
}

// Stripe configures a Receiver for Stripe: Source "stripe", the
// Stripe-Signature verified with secrets by a StripeVerifier (5 minutes'
// tolerance), the event's "id" (evt_…) as the key, and the event's "id",
// "type" and "created" as its fingerprint, so that a retry Stripe rendered
// afresh is replayed, not a 422.
func Stripe(secrets ...string) func(*Options) {
	return func(o *Options) {
		o.Source = "stripe"
		o.Verifier = &StripeVerifier{Secrets: secrets}
		o.Key = stripeEventID
		o.Fingerprint = stripeFingerprint
	}
}

// GitHub configures a Receiver for GitHub: Source "github", the
// X-Hub-Signature-256 verified with secrets, the X-GitHub-Delivery GUID as
// the key, and that GUID with the X-GitHub-Event name as the fingerprint.
// GitHub signs no timestamp, so replay
// protection rests on the delivery id; set the hook's content type to
// application/json.
func GitHub(secrets ...string) func(*Options) {
	return func(o *Options) {
		o.Source = "github"
		o.Verifier = &HMACVerifier{Secrets: secrets, Header: "X-Hub-Signature-256"}
		o.Key = gitHubDelivery
		o.Fingerprint = gitHubFingerprint
	}
}
