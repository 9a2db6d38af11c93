// Package receipts is a small receipts service on 127.0.0.1: a stand-in for
// a payment API such as Stripe's, which a handler in lease mode calls
// before its DynamoDB writes. The local stack, the tests, the chaos suite
// and the benchmark run it to see how often, and how concurrently, the
// functions call out.
//
//	srv, err := receipts.Start("127.0.0.1:0")
//	if err != nil { ... }
//	defer srv.Close()
//	// POST srv.URL() with Idempotency-Key: <key> and {"id":…,"account":"acc-1","cents":500}
//
// It keeps Stripe's idempotency rules
// (https://docs.stripe.com/api/idempotent_requests):
//
//   - the Idempotency-Key header is required, at most 255 characters;
//   - the first request with a key issues a receipt: 201 {"receipt":"rcpt_000001"};
//   - the same key with the same body (id, account and cents) within
//     Options.KeyLifetime replays it: 200, the same receipt, and the header
//     Idempotent-Replayed: true;
//   - the same key with another body is refused: 422;
//   - a request arriving while another with its key is in flight is
//     refused: 409, as Stripe answers concurrent requests;
//   - a request that fails validation (400) saves nothing for its key;
//   - after the key lifetime the key is forgotten: a new receipt.
//
// Errors are JSON in Stripe's shape: {"error":{"type":…,"message":…}}.
//
// Every call is recorded (Calls, Issued, MaxInFlight), and the service can
// be told to fail, hang, lose its answers or slow down, from Go (FailNext,
// HangNext, DropAnswerNext, SetLatency, Reset) or over HTTP under
// AdminURL(), for other processes:
//
//	POST /_admin/fail?n=3&status=503   the next 3 calls answer 503, issuing nothing
//	POST /_admin/hang?n=1              the next call never answers, issuing nothing
//	POST /_admin/drop?n=1              the next call does its work, then its answer is lost
//	POST /_admin/latency?ms=20         20 ms added to every call
//	POST /_admin/reset                 forget every key, call and fault
//	GET  /_admin/calls                 the calls, as JSON
//	GET  /_admin/stats                 calls, receipts issued, in flight, max in flight per key
//
// This package is development tooling: no function links it.
package receipts
