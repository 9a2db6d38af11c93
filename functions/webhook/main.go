// Command webhook is the reference webhook receiver behind API Gateway:
// credits and Stripe payments, each applied once (routes in
// internal/routes).
package main

import (
	"context"
	"log"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	"github.com/aws/aws-sdk-go-v2/service/ssm"

	"github.com/idemkit/kit/functions/internal/credit"
	"github.com/idemkit/kit/functions/webhook/internal/routes"
	"github.com/idemkit/kit/idem"
	"github.com/idemkit/kit/idem/webhook"
)

func main() {
	ctx := context.Background()
	env, err := credit.LoadEnv(nil)
	if err != nil {
		log.Fatal(err)
	}
	cfg, err := config.LoadDefaultConfig(ctx) // honours AWS_ENDPOINT_URL_DYNAMODB
	if err != nil {
		log.Fatal(err)
	}
	store, err := idem.New(dynamodb.NewFromConfig(cfg), env.ProcessedTable, func(o *idem.Options) { o.RetentionDays = env.RetentionDays })
	if err != nil {
		log.Fatal(err)
	}
	secrets := webhook.SecretEnv{Parameters: ssm.NewFromConfig(cfg), Secrets: secretsmanager.NewFromConfig(cfg)}
	mux, err := routes.New(ctx, store, env.AccountsTable, secrets)
	if err != nil {
		log.Fatal(err)
	}
	lambda.Start(mux.Handle) // HTTP API (v2) and REST API (v1) events alike
}
