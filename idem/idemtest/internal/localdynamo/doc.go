// Package localdynamo starts a local DynamoDB-compatible server on 127.0.0.1
// that behaves like DynamoDB under load, for tests, the local stack and
// benchmarks.
//
// It is test support, internal to idemtest, and nothing a function links
// imports it: idemtest's Endpoint shares one server across a test binary,
// and the tooling (idem/cmd) starts its own through idemtest.StartDynamoDB
// and idemtest.StartSQS.
//
// It runs moto (https://github.com/getmoto/moto, Apache-2.0; DynamoDB
// Local's licence keeps it off these machines) with a patch, embedded here
// as localdynamo.py and its ldpatch package (a Python module per concern),
// that fixes what stock moto_server gets wrong for an idempotency kit,
// whose tests and figures it would otherwise falsify. Stock moto
// deep-copies the tables a TransactWriteItems touches and restores the copy
// when the transaction is cancelled, erasing what other requests committed
// meanwhile, and the copy makes a transaction's cost grow with the table,
// where DynamoDB's does not; it has no TTL; and it accepts much that
// DynamoDB refuses.
// As measured when the patch was written: 8 concurrent clients kept 299 of
// 300 credits on stock moto, 300 of 300 here; a transaction took 7 ms at
// 100 items and 211 ms at 10,000 on stock moto, about 5 ms at both here.
// The patch:
//
//   - requests are served one at a time, so concurrent transactions cannot
//     erase each other's writes;
//   - a cancelled TransactWriteItems restores only the items it touched, so a
//     transaction costs the same at 100 items and at 10,000;
//   - an optional sweeper deletes expired items of tables with TTL enabled, as
//     DynamoDB's TTL does (lazily, in DynamoDB's case);
//   - a TransactWriteItems resent with the ClientRequestToken of a commit
//     from the last ten minutes succeeds without applying again, so the SDK's
//     retry of a commit whose answer was lost behaves as on DynamoDB;
//   - DynamoDB Streams, on the same endpoint (the SDK's dynamodbstreams
//     client with BaseEndpoint set to Endpoint), emit one record per item
//     change that happened: none for a cancelled transaction, a failed
//     condition, a token replay or a write that changes nothing; the
//     table's Region in awsRegion; the TTL sweeper's deletes as REMOVE
//     records from the DynamoDB service principal; shard iterators that
//     expire after 15 minutes. Records are kept until the server stops
//     (DynamoDB keeps them 24 hours), in one shard per table;
//   - it refuses what DynamoDB refuses, before anything is written, with
//     DynamoDB's error codes: the API model's constraints (required
//     members, enum values, lengths, table names of 3 to 255
//     [a-zA-Z0-9_.-]), attribute values (sets non-empty without
//     duplicates, numbers DynamoDB can store), expression and legacy
//     parameters in one request, unused placeholders, keys that do not
//     match the table, empty or oversized transactions, two actions on one
//     item, batches of more than 25 writes, a second TTL change within the
//     hour, a missing table (ResourceNotFoundException); and it answers
//     ProjectionExpression paths with list indexes (#l[1]). A user's
//     request DynamoDB would refuse fails here too, not in production.
//     The conformance test (run it against DynamoDB Local or AWS with
//     AWS_ENDPOINT_URL_DYNAMODB) holds a case for each.
//
// Usage:
//
//	srv, err := localdynamo.Start(ctx)
//	if err != nil { ... }
//	defer srv.Stop()
//	// point the SDK at srv.Endpoint (AWS_ENDPOINT_URL_DYNAMODB)
//
// StartSQS starts moto's SQS in a process of its own (an SQS long poll must
// never hold up DynamoDB requests), patched where moto differs from SQS in
// what the kit's redrive depends on: a message moved to its dead-letter
// queue carries DeadLetterQueueSourceArn, and a FIFO queue drops a message
// whose deduplication id it was sent in the last 5 minutes even when that
// message was deleted or moved since.
//
// moto is found as the python3 on PATH (Options.Python); when it is missing,
// Start fails with the command that installs it.
package localdynamo
