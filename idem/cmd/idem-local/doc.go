// Command idem-local runs the SAM application in template.yaml on this
// machine, without Docker or an AWS account: `make local`, and `make demo`.
// The library behind it is idem/cmd/internal/localstack; no function links
// either.
//
//	idem-local [flags]            run the stack until Ctrl-C or SIGTERM
//	idem-local -demo [flags]      run it, replay events/ with every message
//	                              delivered several times, some at once, print
//	                              the balances and the receipts, exit
//	idem-local send [-n N] BODY   send BODY to the running stack's queue N times
//
// It needs Go and Python 3 with moto (the Makefile installs moto[server]
// with pip when it is missing).
//
// # What make local runs
//
// `make local` builds bin/idem-local and runs it from the module's root.
// It reads template.yaml and:
//
//  1. starts the local DynamoDB (idemtest.StartDynamoDB, its TTL sweep
//     every 10 s, logged) and moto's SQS, each on 127.0.0.1 and a free port,
//     or uses the endpoints in AWS_ENDPOINT_URL_DYNAMODB and
//     AWS_ENDPOINT_URL_SQS (DynamoDB Local in Docker, say);
//  2. creates the tables and queues from the template's own resources (key
//     schema, attribute definitions, billing mode, TTL, stream, visibility
//     timeout, retention, RedrivePolicy), so the template stays the one
//     schema; !Ref, !GetAtt, !Sub, !If… resolve to the local names;
//  3. builds each function for this machine with the template's own build
//     (make build-<LogicalId>, with LAMBDA_GOOS and LAMBDA_GOARCH set to the
//     host's) and runs its bootstrap under the AWS Lambda Runtime Interface
//     Emulator, itself built once per build directory from a pinned version
//     outside this module's go.mod, so none of its modules reach a user's
//     module graph. Each function gets the template's environment (its
//     endpoint variables pointed at the local servers), its LoggingConfig as
//     AWS_LAMBDA_LOG_FORMAT and AWS_LAMBDA_LOG_LEVEL, dummy credentials, and
//     local secret values in place of the SSM parameter names. An emulator
//     takes one invoke at a time, so each function queues its invokes and
//     starts up to -instances emulators on demand, like Lambda's execution
//     environments;
//  4. serves the local receipts service (idem/cmd/internal/receipts), a stand-in
//     for a payment API that honours Idempotency-Key for 24 hours, and gives
//     its URL as RECEIPTS_URL, so each credit runs under the kit's lease;
//  5. serves the HttpApi routes on 127.0.0.1:3000, each request turned into
//     an API Gateway payload 2.0 event (lower-cased headers, rawPath,
//     routeKey, cookies, a base64 body when it is not UTF-8 text) and the
//     function's answer back into HTTP, as sam local start-api does;
//  6. polls the queue of each SQS event like the event source mapping:
//     batches of BatchSize, at most ScalingConfig.MaximumConcurrency at once
//     (never more than -instances: the banner shows the smaller), the
//     successes deleted, the batchItemFailures visible again after
//     -retry-delay, and SQS moving a message to the dead-letter queue after
//     maxReceiveCount receives;
//  7. reads the stream of each DynamoDB event (the outbox's, for
//     RelayFunction) shard by shard with its FilterCriteria, bisect on
//     error, retries and on-failure destination.
//
// It then prints where everything listens and how to send a credit:
//
//	idem-local: /…/template.yaml running (started in 4.7s)
//	  DynamoDB   http://127.0.0.1:35337
//	  SQS        http://127.0.0.1:35443
//	  table      ProcessedTable               idem-local-ProcessedTable (TTL on expiresAt, stream NEW_IMAGE)
//	  queue      CreditsQueue                 http://127.0.0.1:35443/123456789012/idem-local-CreditsQueue (to its dead-letter queue after 5 receives)
//	  function   QueueFunction                up to 2 environments, timeout 30s
//	  function   WebhookFunction              up to 2 environments, timeout 10s
//	  receipts   RECEIPTS_URL                 http://127.0.0.1:3002/receipts (admin http://127.0.0.1:3002/_admin: fail, hang, drop, latency, calls, stats, reset)
//	  route      POST /webhooks/credits       http://127.0.0.1:3000/webhooks/credits → WebhookFunction
//	  poller     QueueFunction.Credits        idem-local-CreditsQueue → QueueFunction (batch 10, 2 at once)
//	  stream     RelayFunction.Outbox         idem-local-ProcessedTable's stream → RelayFunction (batch 100, …)
//	  secret     WEBHOOK_SECRET               "local-webhook-secret" (set WEBHOOK_SECRET to change it)
//	  …
//	Send a credit over HTTP (repeat it: the balance moves once):
//	  curl -i http://127.0.0.1:3000/webhooks/credits -H 'Idempotency-Key: evt_001' \
//	    -H 'X-Signature: sha256=9c1e7ab81b4b5a30de76d2befa7def54d30d8d346e0adeed172f4e4cb01a2061' \
//	    -d '{"id":"evt_001","account":"acc-9","cents":500}'
//	Or through the queue, another sender with keys of its own (repeat it: the balance moves once):
//	  bin/idem-local send -n 3 '{"id":"evt_002","account":"acc-9","cents":250}'
//	  …
//
// Send the curl line three times: three 200s with the same body and one
// credit, the second and third with Idempotent-Replayed: true. The aws
// lines it prints carry dummy credentials, which the local servers accept
// and the AWS CLI needs. The HTTP route and the queue are two senders, each
// with its own scope of keys, so their examples carry ids of their own.
// The running stack's endpoints and names are written to
// bin/local/stack.json, which `idem-local send` reads: it sends a message
// to the stack's queue with its IdempotencyKey attribute (the body's "id",
// or -key), without the AWS CLI.
//
// Ctrl-C or SIGTERM stops it all, by process id, and frees the ports; a
// second Ctrl-C quits at once. make does not pass SIGINT on, so a SIGINT
// sent to make's pid alone does not reach it: signal the process group, or
// send SIGTERM.
//
// # make demo
//
// `make demo` starts the same stack, then sends every event in events/
// three times, the webhooks racing each other, and prints the balances
// against one credit per message, one receipt per credit, and the ledger:
// one entry per credit, announced through the outbox, relayed from the
// claims table's stream and consumed from the ledger queue. It ends with
// "demo: one effect per message", or fails:
//
//	demo: 13 message(s) (11 distinct keys), each delivered 3 times
//	demo:   HTTP evt_001                          POST /webhooks/credits ×3 at once → 409 409 200, the 409s retried → 200 200  (apigw-credits-v1.json)
//	demo:   SQS  acc-9/evt_101                    sent ×3 at once to idem-local-CreditsQueue  (sqs-credits-fifo.json)
//	…
//	demo: balances in idem-local-AccountsTable (each credit counted once):
//	  account          before      after   expected
//	  acc-7                 0        700        700  ok
//	  acc-9                 0       3800       3800  ok
//	demo: receipts service: 9 call(s), 9 receipt(s) issued, at most 1 call(s) in flight for one key, 0 refused as concurrent (409)
//	demo: 6 message(s) in idem-local-CreditsDeadLetterQueue (the 6 copies of the messages that are no credit, after their last receive)
//	demo: ledger: 9 new entries for 9 credits in idem-local-LedgerTable (0 before)  ok
//
//	demo: one message's trace (http://127.0.0.1:4318/traces/5135ccc4ea0012407213ef455b4819e8):
//	trace 5135ccc4ea0012407213ef455b4819e8
//	  WebhookFunction                       WebhookFunction +   0.0 ms   182.4 ms
//	    POST /webhooks/credits              WebhookFunction +   0.5 ms   181.9 ms outcome=Processed cached=false attempts=1 …
//	      DynamoDB.UpdateItem               WebhookFunction +   0.7 ms   136.6 ms
//	      DynamoDB.TransactWriteItems       WebhookFunction + 139.5 ms    42.7 ms
//	      send idem-local-LedgerQueue       RelayFunction   + 830.3 ms    46.8 ms messaging.message.id=73d4…
//	        process idem-local-LedgerQueue  LedgerFunction  +1178.4 ms   276.3 ms outcome=Processed cached=false attempts=1 …
//	          DynamoDB.TransactWriteItems   LedgerFunction  +1178.5 ms   275.0 ms
//
//	demo: one effect per message
//
// The trace's root is the webhook function's invoke, whose span the
// functions start with the OpenTelemetry SDK (functions/internal/telemetry);
// the ledger's delivery continues the message's trace and links its own
// invoke's.
//
// The SQS records are sent again as a producer re-sending them would, with
// the message's key in the IdempotencyKey attribute (the record's own, else
// its FIFO message group and deduplication id, else the body's "id", else
// its messageId); the webhooks are signed again with the local secrets.
// The 409s are deliveries that met another of their key in flight, told
// to retry: the lease held by another environment, or, with
// -max-concurrency, another invoke of the same process running it. The malformed credits go round five receives and end
// in the dead-letter queue.
//
// # Flags
//
// make local LOCAL_FLAGS='…' passes flags; bin/idem-local -help lists them
// with their defaults:
//
//   - -api-addr: where the routes are served (port 0: any free port).
//   - -instances: execution environments per function, at most.
//   - -max-concurrency N: every function as on Lambda Managed Instances,
//     each environment running up to N invokes at once in one process
//     (AWS_LAMBDA_MAX_CONCURRENCY); the emulator's managed-instances mode
//     runs on Linux only, as root. -param UseManagedInstances=true runs the
//     template's Managed* functions instead, with the template's
//     concurrency.
//   - -ttl-sweep: how often the local DynamoDB deletes expired claims.
//   - -retry-delay: how long a failed SQS record stays invisible before its
//     next receive (negative: the queue's VisibilityTimeout, as Lambda
//     waits).
//   - -param Name=Value: a template parameter override, such as
//     -param RetentionDays=20.
//   - -stack-name: the prefix of the local table and queue names.
//   - -template: the SAM template to run.
//   - -build-dir: where the functions and the emulator are built, and
//     stack.json written.
//   - -bootstrap LogicalId=path: run a prebuilt bootstrap for a function.
//   - -receipts-addr, -no-receipts: where the receipts service listens, or
//     none (RECEIPTS_URL then stays as the template sets it: empty, no call
//     out, one transaction per credit).
//   - -traces-addr: where the functions' spans are received, as OTLP over
//     HTTP (protobuf, which the functions' SDK sends, or JSON): every
//     function gets OTEL_EXPORTER_OTLP_ENDPOINT pointing there, as the ADOT
//     layer's collector on AWS; GET /traces lists the traces received,
//     /traces/<id> shows one as a tree (empty: the functions export none).
//   - -quiet: hide the functions' output and the per-request lines.
//   - -demo, -events, -deliveries: replay events/ and exit (make demo).
//
// # Watching retention
//
// The template's RetentionDays is at least 15, so real claims outlive a
// session. To watch TTL at work, put a claim that expired a minute ago:
//
//	aws --endpoint-url $DYNAMODB --region us-east-1 dynamodb put-item --table-name idem-local-ProcessedTable \
//	  --item "{\"pk\":{\"S\":\"credits#old\"},\"expiresAt\":{\"N\":\"$(( $(date +%s) - 60 ))\"}}"
//	# within 10 s:
//	localdynamo: ttl sweep deleted 1 expired item(s) from 123456789012/us-east-1/idem-local-ProcessedTable
//
// # With Docker: sam local invoke and DynamoDB Local
//
// sam local runs the functions in Lambda's container images and overrides
// only the environment variables the template declares. The template
// declares AWS_ENDPOINT_URL_DYNAMODB for every function (parameter
// DynamoDBEndpoint, empty by default: the SDK ignores an empty value), and
// events/env.json sets it to a DynamoDB Local on 127.0.0.1:8000, with the
// table names make local uses. DynamoDB Local, in memory, one database
// whatever the credentials and Region:
//
//	docker run --rm -d --name dynamodb-local -p 127.0.0.1:8000:8000 \
//	  amazon/dynamodb-local -jar DynamoDBLocal.jar -inMemory -sharedDb
//
// Let the template create the tables there (this command builds and runs
// the stack once against it; stop it when the banner shows):
//
//	AWS_ENDPOINT_URL_DYNAMODB=http://127.0.0.1:8000 make local
//
// Build, then invoke; --docker-network host lets the function's container
// reach 127.0.0.1:8000. Invoke it again: the answer is the same and the
// balances do not move. DynamoDB Local takes any credentials: without a
// profile, prefix each aws command with AWS_ACCESS_KEY_ID=local
// AWS_SECRET_ACCESS_KEY=local.
//
//	sam build
//	sam local invoke QueueFunction -e events/sqs-credits.json --env-vars events/env.json --docker-network host
//	aws --endpoint-url http://127.0.0.1:8000 --region us-east-1 dynamodb scan --table-name idem-local-AccountsTable
//
// WebhookFunction reads its two secrets from SSM Parameter Store as
// deployed (sam local passes your AWS credentials into the container; only
// DynamoDB is local). The sample events are signed with the test secrets
// local-webhook-secret and whsec_local_test; in a development account:
//
//	aws ssm put-parameter --type SecureString --name /idemkit/webhook-secret --value local-webhook-secret
//	aws ssm put-parameter --type SecureString --name /idemkit/stripe-webhook-secret --value whsec_local_test
//	sam local invoke WebhookFunction -e events/apigw-credits.json --env-vars events/env.json --docker-network host
//	# A Stripe signature expires after 5 minutes: sign the stored event again first.
//	go run -C functions ./webhook/internal/signevent < events/apigw-stripe.json > /tmp/stripe.json
//	sam local invoke WebhookFunction -e /tmp/stripe.json --env-vars events/env.json --docker-network host
//
// If those parameters hold real secrets, sign the events with them instead
// (go run -C functions ./webhook/internal/signevent -scheme hmac -secret … <
// events/apigw-credits.json). --docker-network host needs Linux, or Docker
// Desktop with host networking turned on; otherwise set
// AWS_ENDPOINT_URL_DYNAMODB in events/env.json to
// http://host.docker.internal:8000 and leave the flag out.
package main
