// Command webhook is the reference webhook receiver behind API Gateway:
// credits and Stripe payments, each applied once (routes in
// internal/routes).
package main

import (
	"context"
	"log"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	"github.com/aws/aws-sdk-go-v2/service/ssm"

	"github.com/idemkit/kit/functions/internal/awsenv"
	"github.com/idemkit/kit/functions/internal/credit"
	"github.com/idemkit/kit/functions/internal/telemetry"
	"github.com/idemkit/kit/functions/webhook/internal/routes"
	"github.com/idemkit/kit/idem/webhook/secrets"
)

func main() {
	tp, err := telemetry.Start(context.Background()) // the OpenTelemetry SDK, exporting OTLP when OTEL_* name an endpoint
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()
	env, err := credit.LoadEnv(nil)
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
	mux, err := routes.New(ctx, store, secrets.Env{
		Parameters: ssm.NewFromConfig(cfg, func(o *ssm.Options) { o.BaseEndpoint = awsenv.Endpoint(nil, "SSM") }),
		Secrets:    secretsmanager.NewFromConfig(cfg, func(o *secretsmanager.Options) { o.BaseEndpoint = awsenv.Endpoint(nil, "SECRETS_MANAGER") }),
	}, credit.NewApplier(env)) // RECEIPTS_URL, LEDGER_QUEUE_URL unset: no receipts, no ledger
	if err != nil {
		log.Fatal(err)
	}
	lambda.Start(telemetry.Handler(tp, mux.Handle)) // HTTP API (v2) and REST API (v1) events alike
}
