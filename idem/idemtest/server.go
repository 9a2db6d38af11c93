package idemtest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/idemkit/kit/idem/idemtest/internal/localdynamo"
)

// Server is a local DynamoDB or SQS server that StartDynamoDB or StartSQS
// started on 127.0.0.1, in a process of its own. It exits with the
// program that started it (it watches its stdin); Stop stops it earlier.
type Server struct {
	// Endpoint is the server's base URL, such as "http://127.0.0.1:40123",
	// for the SDK's BaseEndpoint.
	Endpoint string

	srv *localdynamo.Server
}

// PID is the server's process id.
func (s *Server) PID() int { return s.srv.PID() }

// Stop stops the server by its process id and waits until it has exited.
// It is safe to call more than once.
func (s *Server) Stop() error { return s.srv.Stop() }

// ServerOptions configure StartDynamoDB and StartSQS.
type ServerOptions struct {
	// Log receives the server's own log lines (TTL sweeps, warnings,
	// errors). Defaults to os.Stderr.
	Log io.Writer

	// TTLSweepInterval is how often StartDynamoDB's server deletes the
	// expired items of tables with TTL enabled, as DynamoDB's TTL does; not
	// for StartSQS. Defaults to 0: never.
	TTLSweepInterval time.Duration
}

// StartDynamoDB starts a DynamoDB server of the caller's own: the kit's
// patched moto, the one Endpoint shares across a test binary, for a
// program that runs a local stack or benchmarks. It needs Python 3 with
// moto[server] installed; without it, it fails with the command that
// installs it.
func StartDynamoDB(ctx context.Context, optFns ...func(*ServerOptions)) (*Server, error) {
	o := serverOptions(optFns)
	if o.TTLSweepInterval < 0 {
		return nil, fmt.Errorf("idemtest: StartDynamoDB: TTLSweepInterval is %v; want 0 (never) or more", o.TTLSweepInterval)
	}
	return startServer(ctx, localdynamo.Start, o)
}

// StartSQS starts a local SQS server (moto, patched where it differs from
// SQS in what the kit's outbox relay and redrive depend on) of the caller's
// own, for a test or program that sends to or receives from a queue.
// Point the SDK's sqs client at its Endpoint; Received turns a message
// received from it into the event Lambda would hand a function.
func StartSQS(ctx context.Context, optFns ...func(*ServerOptions)) (*Server, error) {
	o := serverOptions(optFns)
	if o.TTLSweepInterval != 0 {
		return nil, errors.New("idemtest: StartSQS: TTLSweepInterval is for StartDynamoDB's server, not SQS")
	}
	return startServer(ctx, localdynamo.StartSQS, o)
}

func serverOptions(optFns []func(*ServerOptions)) ServerOptions {
	var o ServerOptions
	for _, fn := range optFns {
		fn(&o)
	}
	return o
}

func startServer(ctx context.Context, start func(context.Context, ...func(*localdynamo.Options)) (*localdynamo.Server, error), o ServerOptions) (*Server, error) {
	srv, err := start(ctx, func(lo *localdynamo.Options) {
		if o.Log != nil {
			lo.Log = o.Log
		}
		lo.TTLSweepInterval = o.TTLSweepInterval
	})
	if err != nil {
		return nil, fmt.Errorf("idemtest: %w", err)
	}
	return &Server{Endpoint: srv.Endpoint, srv: srv}, nil
}

// ExternalEndpoint is the DynamoDB endpoint the environment names,
// $AWS_ENDPOINT_URL_DYNAMODB, else $AWS_ENDPOINT_URL, or "" when it names
// none: where Endpoint and Start look before they start a local server,
// for a program that decides the same way whether to call StartDynamoDB.
func ExternalEndpoint() string { return localdynamo.ExternalEndpoint() }

// CreateTableContext is CreateTable for code without a testing.TB, such
// as a benchmark program: it returns the error, and the table stays until
// the server stops.
func CreateTableContext(ctx context.Context, client *dynamodb.Client, t Table) (string, error) {
	name, err := localdynamo.CreateTable(ctx, client, localdynamo.Table(t))
	if err != nil {
		return "", fmt.Errorf("idemtest: %w", err)
	}
	return name, nil
}
