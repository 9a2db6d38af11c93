// Package webhook receives webhooks through API Gateway and applies each
// delivery's effect exactly once, answering every redelivery with the first
// delivery's response.
//
// A Handler reads a verified delivery and returns its answer, its effect
// and an error: a Response (status, headers, body), an idem.Effect whose
// Writes commit with the delivery's claim in one transaction, the shape of
// every handler in the kit (idem.Wrap's too). JSONHandler decodes the body
// into a Go value first. A Receiver serves HTTP API events (payload 2.0,
// also Lambda function URLs) with HandleV2 and REST API proxy events with
// HandleV1, in aws-lambda-go's own types; a Mux routes several senders by
// method and path:
//
//	type credit struct {
//		Account string `json:"account"`
//		Cents   int64  `json:"cents"`
//	}
//	credits, err := webhook.New(store, webhook.JSONHandler(func(ctx context.Context, c credit, req webhook.Request) (webhook.Response, idem.Effect, error) {
//		w, err := idem.Update("accounts", map[string]string{"account": c.Account},
//			expression.Add(expression.Name("balance"), expression.Value(c.Cents)))
//		if err != nil {
//			return webhook.Response{}, idem.Effect{}, err
//		}
//		resp, err := webhook.JSON(200, map[string]string{"status": "credited", "id": req.Key})
//		return resp, idem.Effect{Writes: []types.TransactWriteItem{w}}, err
//	}), func(o *webhook.Options) {
//		o.Verifier = &webhook.HMACVerifier{Secrets: []string{os.Getenv("WEBHOOK_SECRET")}}
//	})
//	stripe, err := webhook.New(store, handleStripe, webhook.Stripe(os.Getenv("STRIPE_WEBHOOK_SECRET")))
//	lambda.Start(webhook.Mux{"POST /webhooks/credits": credits, "POST /webhooks/stripe": stripe}.HandleV2)
//
// The Response is the answer, stored with the claim: a Handler leaves
// idem.Effect.Response empty (the Receiver refuses one that sets it: a
// 500, nothing committed). To record a failed condition of the writes as
// the delivery's outcome instead of a 409, set idem.Effect.Rejected with
// Reject: its Response answers this delivery and every redelivery.
//
// Each delivery goes through, in order: the body size limit (413); base64
// decoding when API Gateway encoded the body (400); the signature over the
// raw bytes (401); the body, which must be exactly one JSON value in valid
// UTF-8 (400); the idempotency key, 1 to 255 printable ASCII characters
// (400); the payload's fingerprint (400); then idem.Store.Process, which
// claims the key and commits the Handler's writes in one transaction.
// Refusals before the claim are logged and counted as Refused, by the
// Store's Logger and Observers; a payload the Handler refuses (a BadRequest, a body
// JSONHandler cannot decode) is a 400 counted as Failed, since the Store
// sees it while processing the claim. A callback that panics (the verifier, the key or
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
//   - a malformed payload (BadRequest from the Handler, or a body
//     JSONHandler cannot decode, included): 400;
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
// X-Signature otherwise). Package idem/webhook/secrets reads them from the
// environment, SSM Parameter Store or Secrets Manager; it is a package of
// its own, so a webhook that takes its secret another way links neither
// client. Tests sign deliveries with idemtest.HMACSignature and
// idemtest.StripeSignature.
package webhook
