// Package credit is the reference functions' shared effect: a message
// {"id": "evt_001", "account": "acc-9", "cents": 500} adds cents to the
// account's balance, once. It parses bodies strictly, builds the DynamoDB
// write, and reads the functions' environment. With RECEIPTS_URL set, each
// credit first obtains a receipt from that service under the kit's lease
// (Receipts, Apply) and stores it as the account's lastReceipt.
package credit
