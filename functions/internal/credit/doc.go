// Package credit is the reference functions' shared effect: a message
// {"id": "evt_001", "account": "acc-9", "cents": 500} adds cents to the
// account's balance, once. It parses bodies strictly, builds the DynamoDB
// write, and reads the functions' environment.
package credit
