// Command queue is the reference SQS consumer: each credit on the queue is
// applied once, and the batch response names the records to retry (logic
// in internal/handler).
package main

import (
	"context"
	"log"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/idemkit/kit/functions/internal/awsenv"
	"github.com/idemkit/kit/functions/internal/credit"
	"github.com/idemkit/kit/functions/internal/telemetry"
	"github.com/idemkit/kit/functions/queue/internal/handler"
)

func main() {
	tp, err := telemetry.Start(context.Background()) // the OpenTelemetry SDK, exporting OTLP when OTEL_* name an endpoint
	if err != nil {
		log.Fatal(err)
	}
	env, err := credit.LoadEnv(nil) // a bad RETENTION_DAYS stops here
	if err != nil {
		log.Fatal(err)
	}
	cfg, err := awsenv.Config(nil) // the Region and role credentials Lambda sets
	if err != nil {
		log.Fatal(err)
	}
	store, err := credit.NewStore(dynamodb.NewFromConfig(cfg, func(o *dynamodb.Options) { o.BaseEndpoint = awsenv.Endpoint(nil, "DYNAMODB") }), env) // Lambda's JSON logs, EMF metrics
	if err != nil {
		log.Fatal(err)
	}
	h, err := handler.New(store, credit.NewApplier(env)) // RECEIPTS_URL, LEDGER_QUEUE_URL unset: no receipts, no ledger
	if err != nil {
		log.Fatal(err)
	}
	lambda.Start(telemetry.Handler(tp, h))
}
