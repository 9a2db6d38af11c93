package main

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/idemkit/kit/idem"
	"github.com/idemkit/kit/idem/idemtest"
)

// The tests run the command's code in-process (run) against the local
// DynamoDB and SQS servers, found the way the command finds AWS's: the
// SDK's default chain with AWS_ENDPOINT_URL_DYNAMODB and
// AWS_ENDPOINT_URL_SQS set.

var sqsServer struct {
	once sync.Once
	srv  *idemtest.Server
	err  error
}

type stopSQS struct{ m *testing.M }

func (s stopSQS) Run() int {
	code := s.m.Run()
	if sqsServer.srv != nil {
		_ = sqsServer.srv.Stop()
	}
	return code
}

func TestMain(m *testing.M) { idemtest.Main(stopSQS{m}) }

// fixture is a test's processed-ids table and the environment the command
// reads its configuration from.
type fixture struct {
	*idemtest.Env
	t *testing.T
}

func setup(t *testing.T, optFns ...func(*idem.Options)) *fixture {
	t.Helper()
	te := idemtest.NewEnv(t, optFns...)
	none := filepath.Join(t.TempDir(), "none")
	for k, v := range map[string]string{
		"AWS_ENDPOINT_URL_DYNAMODB":   idemtest.Endpoint(t),
		"AWS_REGION":                  "us-east-1",
		"AWS_ACCESS_KEY_ID":           "test",
		"AWS_SECRET_ACCESS_KEY":       "test",
		"AWS_CONFIG_FILE":             none, // no developer's profile leaks in
		"AWS_SHARED_CREDENTIALS_FILE": none,
		"AWS_EC2_METADATA_DISABLED":   "true",
	} {
		t.Setenv(k, v)
	}
	for _, k := range []string{"AWS_PROFILE", "AWS_ENDPOINT_URL", "AWS_SESSION_TOKEN"} {
		t.Setenv(k, "")
		os.Unsetenv(k)
	}
	return &fixture{Env: te, t: t}
}

// sqsClient starts the shared local SQS on first use, points the
// command's SQS client at it, and returns one for the test.
func (f *fixture) sqsClient() *sqs.Client {
	f.t.Helper()
	sqsServer.once.Do(func() {
		sqsServer.srv, sqsServer.err = idemtest.StartSQS(context.Background(), func(o *idemtest.ServerOptions) { o.Log = io.Discard })
	})
	if sqsServer.err != nil {
		f.t.Fatal(sqsServer.err)
	}
	f.t.Setenv("AWS_ENDPOINT_URL_SQS", sqsServer.srv.Endpoint)
	return sqs.NewFromConfig(aws.Config{Region: "us-east-1", Credentials: f.Client.Options().Credentials},
		func(o *sqs.Options) { o.BaseEndpoint = aws.String(sqsServer.srv.Endpoint) })
}

// run runs the command with the table, as a user types it. A dlq run
// polls without waiting (-wait 0s) unless its arguments name a -wait: on
// the local SQS an empty short poll is as final as a long one, and the
// default second of long poll at the end of every read would be most of
// these tests' time. TestDLQ's first run keeps the default.
func (f *fixture) run(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	if len(args) > 0 && args[0] == "dlq" && !slices.ContainsFunc(args, func(a string) bool {
		return a == "-wait" || a == "--wait" || strings.HasPrefix(a, "-wait=") || strings.HasPrefix(a, "--wait=")
	}) {
		args = append([]string{"dlq", "-wait", "0s"}, args[1:]...)
	}
	var out, errb bytes.Buffer
	code = run(context.Background(), append([]string{"-table", f.Processed}, args...), &out, &errb)
	return out.String(), errb.String(), code
}

// mustRun is run, failing the test unless the exit code is want.
func (f *fixture) mustRun(t *testing.T, want int, args ...string) (stdout, stderr string) {
	t.Helper()
	stdout, stderr, code := f.run(t, args...)
	if code != want {
		t.Fatalf("idem %s: expect exit %d, got %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), want, code, stdout, stderr)
	}
	return stdout, stderr
}

// store is a quiet Store on the fixture's table whose clock reads at.
func (f *fixture) store(at time.Time, optFns ...func(*idem.Options)) *idem.Store {
	f.t.Helper()
	return f.Store(f.t, append([]func(*idem.Options){func(o *idem.Options) {
		o.Logger = slog.New(slog.DiscardHandler)
		if !at.IsZero() {
			o.Now = func() time.Time { return at }
		}
	}}, optFns...)...)
}

// item reads the item under key with a consistent read; nil when none.
func (f *fixture) item(key string) map[string]types.AttributeValue {
	f.t.Helper()
	out, err := f.Client.GetItem(context.Background(), &dynamodb.GetItemInput{TableName: aws.String(f.Processed), ConsistentRead: aws.Bool(true),
		Key: map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: key}}})
	if err != nil {
		f.t.Fatal(err)
	}
	return out.Item
}

// contains fails the test unless s holds every one of want.
func contains(t *testing.T, what, s string, want ...string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(s, w) {
			t.Errorf("%s: expect %q in:\n%s", what, w, s)
		}
	}
}

// holdLease starts a ProcessLeased delivery of source's id whose handler
// waits, so that its claim is pending under a live lease, and returns once
// the lease is held; release lets the handler return and gives the
// delivery's error.
func holdLease(ctx context.Context, store *idem.Store, source, id string) (release func() error) {
	held, let := make(chan struct{}), make(chan struct{})
	done := make(chan error, 1)
	go func() {
		_, err := store.ProcessLeased(ctx, idem.Message{ID: id, Source: source, Payload: []byte("p")}, func(context.Context, idem.Message) (idem.Effect, error) {
			close(held)
			<-let
			return idem.Effect{}, nil
		})
		done <- err
	}()
	<-held
	return func() error {
		close(let)
		return <-done
	}
}
