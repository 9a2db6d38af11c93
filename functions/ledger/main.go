// Command ledger consumes the ledger queue: each credit.applied message
// the relay sends becomes one ledger entry, however often it is delivered
// (logic in internal/ledger).
package main

import (
	"context"
	"log"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/idemkit/kit/functions/internal/awsenv"
	"github.com/idemkit/kit/functions/internal/credit"
	"github.com/idemkit/kit/functions/internal/telemetry"
	"github.com/idemkit/kit/functions/ledger/internal/ledger"
)

func main() {
	tp, err := telemetry.Start(context.Background()) // the OpenTelemetry SDK, exporting OTLP when OTEL_* name an endpoint
	if err != nil {
		log.Fatal(err)
	}
	env, err := ledger.LoadEnv(nil) // PROCESSED_TABLE, LEDGER_TABLE, RETENTION_DAYS
	if err != nil {
		log.Fatal(err)
	}
	cfg, err := awsenv.Config(nil) // the Region and role credentials Lambda sets
	if err != nil {
		log.Fatal(err)
	}
	store, err := credit.NewStore(dynamodb.NewFromConfig(cfg, func(o *dynamodb.Options) { o.BaseEndpoint = awsenv.Endpoint(nil, "DYNAMODB") }), env.StoreEnv()) // Lambda's JSON logs, EMF metrics
	if err != nil {
		log.Fatal(err)
	}
	h, err := ledger.New(store, env.LedgerTable)
	if err != nil {
		log.Fatal(err)
	}
	lambda.Start(telemetry.Handler(tp, h))
}
