package idemtest_test

import (
	"context"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/idemkit/kit/idem/idemtest"
)

// TestStartDynamoDB: a server of the caller's own serves DynamoDB on its
// Endpoint (a table CreateTableContext makes is active, with TTL on its
// attribute), and after Stop, which may be called again, it serves no more.
func TestStartDynamoDB(t *testing.T) {
	ctx := context.Background()
	srv, err := idemtest.StartDynamoDB(ctx, func(o *idemtest.ServerOptions) { o.Log = io.Discard; o.TTLSweepInterval = time.Hour })
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Stop() })
	if !strings.HasPrefix(srv.Endpoint, "http://127.0.0.1:") || srv.PID() <= 0 {
		t.Fatalf("got endpoint %q and pid %d, want a loopback URL and a process id", srv.Endpoint, srv.PID())
	}
	c := idemtest.Client(srv.Endpoint, func(o *dynamodb.Options) { o.RetryMaxAttempts = 1 })
	name, err := idemtest.CreateTableContext(ctx, c, idemtest.Table{Name: "own", HashKey: "pk", TTLAttribute: "expiresAt"})
	if err != nil {
		t.Fatal(err)
	}
	d, err := c.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(name)})
	if err != nil {
		t.Fatal(err)
	}
	if got := d.Table.TableStatus; got != types.TableStatusActive {
		t.Errorf("table %s is %s, want ACTIVE", name, got)
	}
	ttl, err := c.DescribeTimeToLive(ctx, &dynamodb.DescribeTimeToLiveInput{TableName: aws.String(name)})
	if err != nil {
		t.Fatal(err)
	}
	if got := aws.ToString(ttl.TimeToLiveDescription.AttributeName); got != "expiresAt" {
		t.Errorf("TTL on %q, want expiresAt", got)
	}

	if err := srv.Stop(); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	if err := srv.Stop(); err != nil {
		t.Fatalf("second Stop: %v", err)
	}
	if _, err := c.ListTables(ctx, &dynamodb.ListTablesInput{}); err == nil {
		t.Error("the stopped server still answers ListTables")
	}
}

// TestServerOptionsRefused: options a server cannot honour fail the start
// with an error that names them, before any process starts.
func TestServerOptionsRefused(t *testing.T) {
	for _, tc := range []struct {
		name  string
		start func(context.Context, ...func(*idemtest.ServerOptions)) (*idemtest.Server, error)
		opt   func(*idemtest.ServerOptions)
	}{
		{"a negative TTL sweep", idemtest.StartDynamoDB, func(o *idemtest.ServerOptions) { o.TTLSweepInterval = -time.Second }},
		{"a TTL sweep on SQS", idemtest.StartSQS, func(o *idemtest.ServerOptions) { o.TTLSweepInterval = time.Second }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv, err := tc.start(context.Background(), tc.opt)
			if err == nil {
				_ = srv.Stop()
				t.Fatal("got a server, want an error")
			}
			if !strings.Contains(err.Error(), "TTLSweepInterval") {
				t.Errorf("got %q, want an error naming TTLSweepInterval", err)
			}
		})
	}
}

// TestExternalEndpoint: the endpoint the environment names, the
// DynamoDB-specific variable first.
func TestExternalEndpoint(t *testing.T) {
	for _, tc := range []struct {
		name, dynamodb, all, want string
	}{
		{"none", "", "", ""},
		{"AWS_ENDPOINT_URL", "", "http://127.0.0.1:4566", "http://127.0.0.1:4566"},
		{"AWS_ENDPOINT_URL_DYNAMODB first", "http://127.0.0.1:8000", "http://127.0.0.1:4566", "http://127.0.0.1:8000"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("AWS_ENDPOINT_URL_DYNAMODB", tc.dynamodb)
			t.Setenv("AWS_ENDPOINT_URL", tc.all)
			if got := idemtest.ExternalEndpoint(); got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

// A local queue for a test that sends and receives: a message received
// from it, as Lambda's event source mapping would hand it to a function.
func ExampleStartSQS() {
	ctx := context.Background()
	srv, err := idemtest.StartSQS(ctx, func(o *idemtest.ServerOptions) { o.Log = io.Discard }) // Python 3 with moto
	if err != nil {
		fmt.Println(err)
		return
	}
	defer srv.Stop()
	q := sqs.NewFromConfig(aws.Config{Region: "us-east-1", Credentials: credentials.NewStaticCredentialsProvider("test", "test", "")},
		func(o *sqs.Options) { o.BaseEndpoint = aws.String(srv.Endpoint) })
	queue, err := q.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("credits")})
	if err != nil {
		fmt.Println(err)
		return
	}
	if _, err := q.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: queue.QueueUrl, MessageBody: aws.String(`{"cents":500}`)}); err != nil {
		fmt.Println(err)
		return
	}
	out, err := q.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: queue.QueueUrl, MessageAttributeNames: []string{"All"}})
	if err != nil || len(out.Messages) != 1 {
		fmt.Println(len(out.Messages), err)
		return
	}
	rec := idemtest.Received(out.Messages[0], "arn:aws:sqs:us-east-1:123456789012:credits")
	fmt.Println(rec.EventSource, rec.Body)
	// Output: aws:sqs {"cents":500}
}
