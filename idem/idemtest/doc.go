// Package idemtest helps tests of code built on idem run against a real
// DynamoDB-compatible endpoint, never a mock of the claim logic.
//
// The endpoint is AWS_ENDPOINT_URL_DYNAMODB when set (DynamoDB Local, a
// test account), else AWS_ENDPOINT_URL when set, else a local server the
// test binary starts once and Main stops: the kit's patched moto launcher,
// which needs Python 3 with moto[server] installed (pip install
// 'moto[server]'); without it a test fails with one line that says so, and
// an Example prints that line (ExampleEnv).
//
//	func TestMain(m *testing.M) { idemtest.Main(m) }
//
//	func TestCreditOnce(t *testing.T) {
//		env := idemtest.NewEnv(t) // a processed-ids and an accounts table of this test's own
//		store, err := idem.New(env.Client, env.Processed)
//		if err != nil {
//			t.Fatal(err)
//		}
//		report := idemtest.ReplayConcurrently(context.Background(), 5, func(ctx context.Context) (idem.Result, error) {
//			return store.Process(ctx, idem.Message{ID: "evt-1", Source: "test"}, credit(env.Accounts))
//		})
//		if report.Processed != 1 || env.Balance(t, "acc-1") != 500 {
//			t.Fatalf("want one effect, got %+v", report)
//		}
//	}
//
// Beside the endpoint and tables (Client, CreateTable, ProcessedTable,
// NewEnv), it has a CallCounter of DynamoDB calls by operation, Faults
// that inject throttling, 5xx answers, resets and lost or truncated
// answers beneath the SDK's retries, Replay and ReplayConcurrently that
// deliver one message many times, EMF to read the outcomes a Store
// counted, and the signatures webhook senders compute (HMACSignature,
// StripeSignature) for tests of signed deliveries.
package idemtest
