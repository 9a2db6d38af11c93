// Package localstack runs a SAM template's functions, tables and queues on
// this machine, without Docker: the tooling behind `make local`, like `sam
// local start-api` plus the SQS and DynamoDB stream event source mappings
// that sam local lacks.
//
//	stack, err := localstack.Start(ctx, func(o *localstack.Options) {
//		o.Template = "template.yaml"
//	})
//	if err != nil { ... }
//	defer stack.Stop()
//	// POST to stack.APIURL + "/webhooks/credits"; send to stack.Queues["CreditsQueue"].URL
//
// Start reads the template (CloudFormation's short-form tags included) and
//
//   - starts idemtest's local DynamoDB and moto's SQS on 127.0.0.1, unless
//     AWS_ENDPOINT_URL_DYNAMODB / AWS_ENDPOINT_URL_SQS name other endpoints;
//   - creates the template's AWS::DynamoDB::Table and AWS::SQS::Queue
//     resources from their own properties (key schema, TTL, redrive policy,
//     visibility timeout…), so the template stays the one schema;
//   - builds each AWS::Serverless::Function for this machine with the
//     template's own build (BuildMethod makefile: `make build-<LogicalId>`)
//     and runs it under the AWS Lambda Runtime Interface Emulator with the
//     template's environment, its !Ref and !GetAtt resolved to the local
//     resources, pointed at the local endpoints;
//   - serves idem/cmd/internal/receipts' receipts service, a stand-in for a
//     payment API, on 127.0.0.1 and gives its URL as RECEIPTS_URL to each
//     function that declares the variable without a value
//     (Options.ReceiptsAddr, Options.NoReceipts; Stack.Receipts holds its
//     calls);
//   - serves the HttpApi routes, turning each request into an API Gateway
//     payload 2.0 event;
//   - polls the queue of each SQS event and invokes the function with
//     batches, deleting what succeeded and leaving the batch item failures
//     to SQS, which moves a record to the dead-letter queue after
//     maxReceiveCount;
//   - reads the stream of each DynamoDB event (StreamPoller), shard by
//     shard in order: its FilterCriteria drop records, batchItemFailures
//     checkpoint before the lowest one reported, a function error retries
//     the batch (halved with BisectBatchOnFunctionError), and after
//     MaximumRetryAttempts (-1: a local cap) an on-failure record goes to
//     the DestinationConfig.OnFailure queue.
//
// An emulator takes one invoke at a time, so each function queues its
// invokes and runs up to Options.Instances emulators, started on demand,
// like Lambda's execution environments. A function on a capacity provider
// (CapacityProviderConfig), or every function with Options.MaxConcurrency,
// runs as on Lambda Managed Instances: each emulator in its
// managed-instances mode takes up to PerExecutionEnvironmentMaxConcurrency
// invokes at once, all in one process (Linux, as root).
//
// This package is development tooling: no function links it.
package localstack
