// Package seams holds the tests of the places where two of the kit's
// features meet, each of which passes its own tests alone. It has no API;
// its tests run in plain go test against the local DynamoDB endpoint
// (idem/idemtest).
//
//   - TestMatrix runs every way a message enters the kit (Process,
//     ProcessLeased, the SQS and Kafka adapters per record and in batch
//     transactions, Wrap, stream.Claimed, a webhook Receiver and a Mux
//     through each of their entries: API Gateway's HTTP and REST APIs,
//     net/http directly and through lambdaurl, an ALB target group with
//     either header format) against every feature that cuts across them:
//     the claim cache, an expired claim that lingers, key reuse, a
//     recorded rejection, outgoing messages, scope, prefix, route and
//     tenant isolation, a panic in each callback, the deadline.
//     Each cell states its expected outcome, or why the way has no such
//     case.
//   - TestCoalescing delivers one key 8 times at once in one process
//     through every way: one effect, the others its Duplicates, or, for a
//     webhook, 409s with Retry-After unless Options.InFlightWait lets them
//     wait for the first answer.
//   - The other tests each prove one defect found where two features met,
//     fixed since: an outbox id that outlived its claim, an EventBridge
//     detail field that shadowed the relayed key, Wrap behind the relay,
//     webhook routes that shared keys, an expired pending claim taken for
//     key reuse, key prefixes that read as one another, and a header sent
//     in two spellings.
package seams
