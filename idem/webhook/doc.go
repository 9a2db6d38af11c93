// Package webhook receives webhooks (through API Gateway, an Application
// Load Balancer or net/http) and applies each delivery's effect exactly
// once, answering every redelivery with the first delivery's response.
//
// A Handler reads a verified delivery and returns its answer, its effect
// and an error: a Response (status, headers, body), an idem.Effect whose
// Writes commit with the delivery's claim in one transaction, the shape of
// every handler in the kit (idem.Wrap's too). JSONHandler decodes the body
// into a Go value first. A Receiver, and a Mux that routes several senders
// by method and path, serve each way HTTP reaches a function, in
// aws-lambda-go's own types: HandleV2 an HTTP API's events (payload 2.0,
// also a function URL's), the Mux's Handle a REST API's proxy events too;
// HandleALB an Application Load Balancer's target group; ServeHTTP
// net/http's requests, for lambdaurl.Start, the Lambda Web Adapter and
// servers on ECS or EKS. Every entry goes through the same steps and
// answers alike:
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
//	mux := webhook.Mux{"POST /webhooks/credits": credits, "POST /webhooks/stripe": stripe}
//	lambda.Start(mux.HandleV2) // or mux.Handle, mux.HandleALB; lambdaurl.Start(mux); http.ListenAndServe(addr, mux)
//
// The Response is the answer, stored with the claim: a Handler leaves
// idem.Effect.Response empty (the Receiver refuses one that sets it: a
// 500, nothing committed). To record a failed condition of the writes as
// the delivery's outcome instead of a 409, set idem.Effect.Rejected with
// Reject: its Response answers this delivery and every redelivery.
//
// Each delivery goes through, in order: the body size limit (413;
// net/http's body is read no further); base64 decoding when API Gateway or
// the load balancer encoded the body (400); the signature over the raw
// bytes (401); the body, which must be exactly one JSON value in valid
// UTF-8 (400); the idempotency key, 1 to 255 printable ASCII characters,
// not all spaces (400); the payload's fingerprint (400); then idem.Store.Process, which
// claims the key and commits the Handler's writes in one transaction.
// Refusals before the claim (401, 413, a bad key) are logged and counted
// as Refused, by the Store's Logger and Observers, apart from Failed so
// that strangers posting junk raise no failure alarm (a body that is not
// JSON is logged under the key its headers give, when they give one); a
// payload the Handler refuses (a BadRequest, a body JSONHandler cannot
// decode) is a 400 counted as Failed, since the Store sees it while
// processing the claim. A callback that panics (the verifier, the key or
// fingerprint function, the Handler, Effect.Rejected) fails that delivery
// alone: a 500, counted once as Failed, with nothing committed.
//
// # Senders: key, fingerprint, signature
//
// The key says which message a delivery is; its fingerprint says whether a
// delivery of a key already claimed is a redelivery (the stored answer) or
// a reuse of the key for another payload (422). Per sender:
//
//   - Stripe (the Stripe preset): the event's "id" (evt_…), which every
//     retry keeps; the event's id, type and created; Stripe-Signature,
//     "t=…,v1=…", the HMAC-SHA256 of "{t}.{body}", any v1 may match, t
//     within StripeVerifier.Tolerance of now, either way.
//   - GitHub (the GitHub preset): the X-GitHub-Delivery header, which a
//     redelivery keeps; the delivery id and the X-GitHub-Event name;
//     X-Hub-Signature-256, "sha256=<hex>", with no timestamp: the delivery
//     id is the replay protection.
//   - otherwise (IdempotencyKey): the Idempotency-Key header, bare or as the
//     IETF draft's quoted string, else a configured top-level body field
//     (the header wins when both are there); the SHA-256 of the whole body;
//     an HMACVerifier's X-Signature, "sha256=<hex>" of the body. A Receiver
//     without a Verifier accepts unsigned deliveries.
//
// A key is 1 to 255 printable ASCII characters. A bare key holding a comma
// is refused: it is what two Idempotency-Key headers become once API
// Gateway joins them, as is one sent in two spellings to a REST API
// (Header.Get joins those in a fixed order), so such a request is a 400 on
// every retry rather than a random pick. net/http's repeated headers and
// a multi-value ALB target group's lists are joined alike; a target group
// left at single values hands over only the last one sent.
//
// Stripe renders each attempt afresh: pending_webhooks counts the endpoints
// still waiting, and an endpoint's API version can change between attempts
// of one evt_…. Such a retry is the same event: answered with the stored
// response and logged at INFO as a Duplicate with payloadChanged and both
// bodies' SHA-256 (payloadDigest, storedPayloadDigest), not a 422, which
// would keep Stripe retrying for three days and could get the endpoint
// disabled. For Idempotency-Key senders any change of the body under a used
// key is a 422, as the IETF draft says. A sender whose bodies carry
// something new on every retry (a timestamp) sets its own
// Options.Fingerprint; an error from it is a 400.
//
// # Sources and routes
//
// A Receiver's Source (Options.Source) names the sender in logs and metrics
// and scopes its keys. The presets set "stripe" and "github"; a Receiver
// left at its default and served by a Mux takes the route it matched
// ("POST /charges"), so one Idempotency-Key sent to two routes is two
// requests, as the IETF draft scopes a key to its resource. Served by an
// http.ServeMux it takes the pattern that matched the same way
// (Request.Pattern, "POST /charges"; a pattern without a method, such as
// "/charges", is prefixed with the request's, "POST /charges"), so moving
// a route between a ServeMux and a Mux keeps its keys. Alone (lambdaurl,
// an API Gateway route of its own) it is "webhook".
//
// # Answers
//
// The answers, after the draft "The Idempotency-Key HTTP Header Field":
//
//   - first delivery: the Handler's response, stored with the claim;
//   - redelivery (same key, same fingerprint): exactly the stored status,
//     headers and body, plus Idempotent-Replayed: true; without a lease,
//     a delivery racing the first from another environment is one (its
//     transaction meets the committed claim);
//   - the key reused with another fingerprint: 422;
//   - a malformed payload (BadRequest from the Handler, or a body
//     JSONHandler cannot decode, included): 400;
//   - a failed condition the Handler did not record (Effect.Rejected): 409;
//   - a delivery whose key is in flight: 409 with Retry-After, nothing
//     done; under a lease held in another environment (Options.Lease),
//     the lease's remaining seconds; running in this process, a second,
//     once the wait Options.InFlightWait allows is over (it ends before
//     API Gateway's 29 seconds and the invoke's deadline), unless the
//     first delivery's answer, replayed, comes sooner;
//   - a transient store failure, or a commit whose answer was lost: 503
//     with Retry-After, so the sender retries and, if it had committed, gets
//     the stored answer;
//   - anything else: 500.
//
// Errors are application/problem+json (RFC 9457) with a detail saying what
// went wrong. The payload is the decoded raw body, so a base64 delivery and a
// plain one of the same bytes are one payload, and a redelivery.
//
// # Secrets and signing
//
// Signatures are checked in constant time against every configured secret,
// so secrets rotate without downtime: StripeVerifier (Stripe-Signature,
// with a timestamp tolerance), HMACVerifier (X-Hub-Signature-256 for GitHub,
// X-Signature otherwise). Package idem/webhook/secrets reads them from the
// environment, SSM Parameter Store or Secrets Manager; it is a package of
// its own, so a webhook that takes its secret another way links neither
// client. Tests sign deliveries with idemtest.HMACSignature and
// idemtest.StripeSignature. By hand, for an HMACVerifier:
//
//	body='{"id":"evt_001","account":"acc-9","cents":500}'
//	sig=$(printf '%s' "$body" | openssl dgst -sha256 -hmac "$WEBHOOK_SECRET" | sed 's/^.* //')
//	curl -i "$URL/webhooks/credits" -H 'Idempotency-Key: evt_001' -H "X-Signature: sha256=$sig" --data-binary "$body"
package webhook
