// Command queue is the reference SQS consumer: each credit on the queue is
// applied once, and the batch response names the records to retry (logic
// in internal/handler).
package main

import (
	"context"
	"log"
	"log/slog"
	"os"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/idemkit/kit/functions/internal/credit"
	"github.com/idemkit/kit/functions/queue/internal/handler"
	"github.com/idemkit/kit/idem"
)

func main() {
	env, err := credit.LoadEnv(nil) // a bad RETENTION_DAYS stops here
	if err != nil {
		log.Fatal(err)
	}
	cfg, err := config.LoadDefaultConfig(context.Background()) // honours AWS_ENDPOINT_URL_DYNAMODB
	if err != nil {
		log.Fatal(err)
	}
	// JSON logs on stderr; the kit's EMF metrics go to stdout.
	slog.SetDefault(slog.New(slog.NewJSONHandler(os.Stderr, nil)))
	store, err := idem.New(dynamodb.NewFromConfig(cfg), env.ProcessedTable, func(o *idem.Options) { o.RetentionDays = env.RetentionDays })
	if err != nil {
		log.Fatal(err)
	}
	h, err := handler.New(store, env.AccountsTable)
	if err != nil {
		log.Fatal(err)
	}
	lambda.Start(h)
}
