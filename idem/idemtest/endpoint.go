package idemtest

import (
	"context"
	"os"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/idemkit/kit/idem/idemtest/internal/localdynamo"
)

var shared struct {
	once     sync.Once
	server   *localdynamo.Server
	endpoint string
	err      error
}

// Endpoint returns the DynamoDB endpoint tests talk to:
// $AWS_ENDPOINT_URL_DYNAMODB, else $AWS_ENDPOINT_URL, else a local server
// shared by the whole test binary, started on first use. The shared server
// exits with the test binary (it watches its stdin); Main stops it
// earlier.
func Endpoint(tb testing.TB) string {
	tb.Helper()
	ep, err := sharedEndpoint()
	if err != nil {
		tb.Fatalf("idemtest: no DynamoDB endpoint: %v", err)
	}
	return ep
}

func sharedEndpoint() (string, error) {
	if ep := ExternalEndpoint(); ep != "" {
		return ep, nil
	}
	shared.once.Do(func() {
		shared.server, shared.err = localdynamo.Start(context.Background())
		if shared.err == nil {
			shared.endpoint = shared.server.Endpoint
		}
	})
	return shared.endpoint, shared.err
}

// stop stops the shared server, if one was started.
func stop() {
	if shared.server != nil {
		_ = shared.server.Stop()
	}
}

// Client returns a DynamoDB client for endpoint (Endpoint's, in a test).
// It uses the environment's credentials and Region when set and dummy
// ones otherwise, as a local server accepts any.
func Client(endpoint string, optFns ...func(*dynamodb.Options)) *dynamodb.Client {
	region := os.Getenv("AWS_REGION")
	if region == "" {
		region = os.Getenv("AWS_DEFAULT_REGION")
	}
	if region == "" {
		region = "us-east-1"
	}
	key, secret := os.Getenv("AWS_ACCESS_KEY_ID"), os.Getenv("AWS_SECRET_ACCESS_KEY")
	if key == "" || secret == "" {
		key, secret = "test", "test"
	}
	opts := dynamodb.Options{
		Region:       region,
		BaseEndpoint: aws.String(endpoint),
		Credentials:  credentials.NewStaticCredentialsProvider(key, secret, os.Getenv("AWS_SESSION_TOKEN")),
	}
	return dynamodb.New(opts, optFns...)
}
