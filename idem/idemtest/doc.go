// Package idemtest tests code built on idem the way it runs: against a
// real DynamoDB-compatible endpoint, never a mock of the claim logic, with
// the events Lambda hands a function built as the event source builds
// them, and every delivery repeated as senders repeat them.
//
// The endpoint is AWS_ENDPOINT_URL_DYNAMODB when set (DynamoDB Local, a
// test account), else AWS_ENDPOINT_URL when set, else a local server the
// test binary starts once and Main stops: the kit's patched moto launcher,
// which needs Python 3 with moto[server] installed (pip install
// 'moto[server]'); without it a test fails with one line that says so.
//
//	func TestMain(m *testing.M) { idemtest.Main(m) }
//
//	func TestCreditOnce(t *testing.T) {
//		env := idemtest.NewEnv(t) // a processed-ids and an accounts table of this test's own
//		handle, err := sqsconsumer.New(env.Store(t), credit(env.Accounts))
//		if err != nil {
//			t.Fatal(err)
//		}
//		msg := idemtest.SQSMessage("credits", `{"account":"acc-1","cents":500}`, map[string]string{"IdempotencyKey": "evt-1"})
//		for _, d := range idemtest.Replay(context.Background(), 3, handle, idemtest.SQSEvent(msg)) {
//			if d.Err != nil || len(d.Response.BatchItemFailures) > 0 {
//				t.Fatalf("delivery failed: %v %v", d.Response, d.Err)
//			}
//		}
//		if env.Balance(t, "acc-1") != 500 || env.Outcomes.Count(idem.Processed) != 1 {
//			t.Fatalf("want one credit, got %d and %v", env.Balance(t, "acc-1"), env.Outcomes.All())
//		}
//	}
//
// The events: SQSMessage (FIFO for a FIFO queue's), SQSEvent,
// KafkaRecord and KafkaEvent (an MSK or self-managed Kafka batch),
// HTTPRequest and RESTRequest (API Gateway's two payload formats),
// ALBRequest (ALBMultiValue for a target group with multi-value headers),
// EventBridgeEvent, StreamRecord and DynamoDBEvent, and Received for a
// message a test received from a local queue. Replay and
// ReplayConcurrently hand one event to any of the kit's handlers n times
// and return what each delivery returned (Deliver takes the Mode, for a
// table test of both); ServeHTTP makes an http.Handler one of them, for
// an *http.Request; ReplayAcross hands it at once to handlers built
// each around a Store of its own (Env.Environments), as a function's
// separate execution environments meet in DynamoDB. Outcomes
// (Env.Outcomes, for the Stores Env.Store and Env.Environments build)
// counts what the Stores made of them.
//
// Beside them: the endpoint and tables (Endpoint, Client, CreateTable,
// ProcessedTable; Start for a runnable Example, which has no testing.TB,
// and CreateTableContext for other code without one), a local server of
// the caller's own (StartDynamoDB, which a program runs when
// ExternalEndpoint names none, and StartSQS for a local queue),
// what the tables hold (Balance, Claims, Outbox, Number, ItemCount), a
// CallCounter of DynamoDB calls by operation, Faults that inject
// throttling, 5xx answers, resets, lost or truncated answers and
// contention (transaction conflicts, a global table's write conflicts)
// beneath the SDK's retries, EMF to read the metrics a Store wrote, the
// signatures webhook senders compute (HMACSignature, StripeSignature), a
// table's stream as Lambda reads it (StreamRecords), and
// CheckJSONRoundTrip for event files.
package idemtest
