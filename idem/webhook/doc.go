// Package webhook receives webhooks through API Gateway and applies each
// delivery's effect exactly once, answering every redelivery with the first
// delivery's response.
//
// A Receiver serves HTTP API events (payload 2.0, also Lambda function URLs)
// with HandleV2 and REST API proxy events with HandleV1, in aws-lambda-go's
// own types; a Mux routes several senders by method and path:
//
//	secrets, err := webhook.SecretEnv{}.Load(ctx, "STRIPE_WEBHOOK_SECRET")
//	stripe, err := webhook.New(store, handle, webhook.Stripe(secrets...))
//	lambda.Start(webhook.Mux{"POST /webhooks/stripe": stripe}.HandleV2)
//
// Each delivery goes through, in order: the body size limit (413); base64
// decoding when API Gateway encoded the body (400); the signature over the
// raw bytes (401); the body, which must be exactly one JSON value in valid
// UTF-8 (400); the idempotency key, 1 to 255 printable ASCII characters
// (400); the payload's fingerprint (400); then idem.Store.Process, which
// claims the key and commits the Handler's writes in one transaction.
// Refusals before the claim are logged and counted as Refused through
// Store.ReportRefusal. A callback that panics (the verifier, the key or
// fingerprint function, the Handler, Effect.Rejected) fails that delivery
// alone: a 500, counted once as Failed, with nothing committed.
//
// The key and the fingerprint (what identifies the payload), per sender:
//
//   - Stripe: the event's "id" (evt_…), which every retry keeps; the event's
//     id, type and created, since Stripe renders each attempt afresh;
//   - GitHub: the X-GitHub-Delivery header, which a redelivery keeps; the
//     delivery id and the X-GitHub-Event name;
//   - otherwise (IdempotencyKey): the Idempotency-Key header, bare or as the
//     IETF draft's quoted string, else a configured top-level body field;
//     the SHA-256 of the whole body.
//
// The answers, after the draft "The Idempotency-Key HTTP Header Field":
//
//   - first delivery: the Handler's response, stored with the claim;
//   - redelivery (same key, same fingerprint): exactly the stored status,
//     headers and body, plus Idempotent-Replayed: true;
//   - the key reused with another fingerprint: 422;
//   - a malformed payload (BadRequest from the Handler included): 400;
//   - a failed condition the Handler did not record (Effect.Rejected): 409;
//   - a transient store failure, or a commit whose answer was lost: 503
//     with Retry-After, so the sender retries and, if it had committed, gets
//     the stored answer;
//   - anything else: 500.
//
// Errors are application/problem+json (RFC 9457) with a detail saying what
// went wrong. The payload is the decoded raw body, so a base64 delivery and a
// plain one of the same bytes are one payload, and a redelivery.
//
// Signatures are checked in constant time against every configured secret,
// so secrets rotate without downtime: StripeVerifier (Stripe-Signature,
// with a timestamp tolerance), HMACVerifier (X-Hub-Signature-256 for GitHub,
// X-Signature otherwise). SecretEnv reads secrets from the environment, SSM
// Parameter Store or Secrets Manager.
package webhook
