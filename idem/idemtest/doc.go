// Package idemtest helps tests of code built on idem: a real
// DynamoDB-compatible endpoint (AWS_ENDPOINT_URL_DYNAMODB when set, else a
// local server from idem/internal/localdynamo), tables with unique names, a counter of
// DynamoDB calls, and Replay helpers that deliver one message many times, one
// after another or all at once, so a test can assert a single effect.
package idemtest
