// Command relay sends the outbox items of the processed-ids table's
// stream to their destinations (idem/outbox): the credit.applied messages
// of the queue and webhook functions to the ledger queue.
package main

import (
	"context"
	"log"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-lambda-go/lambdacontext"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/idemkit/kit/functions/internal/awsenv"
	"github.com/idemkit/kit/functions/internal/telemetry"
	"github.com/idemkit/kit/idem/outbox"
)

func main() {
	tp, err := telemetry.Start(context.Background()) // the OpenTelemetry SDK, exporting OTLP when OTEL_* name an endpoint
	if err != nil {
		log.Fatal(err)
	}
	cfg, err := awsenv.Config(nil) // the Region and role credentials Lambda sets
	if err != nil {
		log.Fatal(err)
	}
	relay, err := outbox.New(func(o *outbox.Options) {
		o.SQS = sqs.NewFromConfig(cfg, func(o *sqs.Options) { o.BaseEndpoint = awsenv.Endpoint(nil, "SQS") })
		o.Logger = lambdacontext.NewLogger() // Lambda's JSON logs, with the requestId
	})
	if err != nil {
		log.Fatal(err)
	}
	lambda.Start(telemetry.Handler(tp, relay.Handle)) // DynamoDB stream batches, answered with the first record not sent
}
