package localstack

import (
	"io"
	"os"
	"path/filepath"
	"time"
)

// AccountID is the account the local servers (moto) use.
const AccountID = "123456789012"

// Options configure Start. Every default is written once, on its field, and
// applied in Start.
type Options struct {
	// Template is the SAM template's path. Defaults to "template.yaml".
	// Functions are built from its directory.
	Template string

	// StackName prefixes the names of the tables and queues the template
	// leaves unnamed ("<StackName>-<LogicalId>"). Defaults to "idem-local".
	StackName string

	// Parameters override the template's parameter defaults; each value
	// must meet its parameter's constraints. Defaults to none.
	Parameters map[string]string

	// Region is the functions' AWS_REGION. Defaults to $AWS_REGION, else
	// "us-east-1".
	Region string

	// DynamoDBEndpoint is the DynamoDB endpoint to use instead of starting
	// one. Defaults to $AWS_ENDPOINT_URL_DYNAMODB; when that is empty too,
	// Start starts idemtest's local DynamoDB (idemtest.StartDynamoDB).
	DynamoDBEndpoint string

	// SQSEndpoint is the SQS endpoint to use instead of starting one.
	// Defaults to $AWS_ENDPOINT_URL_SQS; when that is empty too, Start
	// starts moto's SQS (idemtest.StartSQS), if the template has a queue.
	SQSEndpoint string

	// TTLSweepInterval is how often the local DynamoDB deletes expired
	// items. Defaults to 0: never.
	TTLSweepInterval time.Duration

	// APIAddr is where the HttpApi routes are served. Defaults to
	// "127.0.0.1:3000"; a port of 0 picks a free one.
	APIAddr string

	// ReceiptsAddr is where the stack serves its receipts service
	// (idem/cmd/internal/receipts), the stand-in for a payment API whose URL
	// every function declaring RECEIPTS_URL gets, unless the template's
	// value (a parameter) or Env sets one. A loopback address only.
	// Defaults to "127.0.0.1:0": a free port.
	ReceiptsAddr string

	// NoReceipts runs no receipts service: the functions keep the
	// template's RECEIPTS_URL (empty: no call out). Defaults to false.
	NoReceipts bool

	// Instances is the most execution environments (emulator processes)
	// each function runs at once. Defaults to 2.
	Instances int

	// MaxConcurrency runs every function as on Lambda Managed Instances,
	// each environment taking up to this many invokes at once
	// (FunctionConfig.MaxConcurrency: Linux, as root). Defaults to 0:
	// each function as the template has it, a function on a capacity
	// provider taking its PerExecutionEnvironmentMaxConcurrency, any other
	// one invoke at a time.
	MaxConcurrency int

	// RetryDelay is how long an SQS record the function failed stays
	// invisible before it is received again (Poller.RetryDelay). Negative
	// keeps the queue's VisibilityTimeout, as Lambda does. Defaults to 0.
	RetryDelay time.Duration

	// PollWait is the SQS pollers' long-poll wait. Defaults to 20 seconds.
	PollWait time.Duration

	// Secrets are local values of secrets the template names. A secret
	// NAME is given to every function whose template environment has
	// NAME, NAME_PARAMETER or NAME_ID, and replaces the latter two, which
	// point at SSM Parameter Store or Secrets Manager. Defaults to none.
	Secrets map[string]string

	// Traces starts an OTLP endpoint (Stack.Traces) and points every
	// function's OTEL_EXPORTER_OTLP_ENDPOINT at it, so that their spans
	// can be read. Defaults to false: the functions export none.
	Traces bool

	// TracesAddr is where Traces listens, a loopback address. Defaults
	// to "127.0.0.1:0": any free port.
	TracesAddr string

	// Env is added to every function's environment, last. Defaults to none.
	Env map[string]string

	// BuildDir receives the builds. Defaults to "bin/local" beside the
	// template.
	BuildDir string

	// Bootstraps maps a function's logical id to a bootstrap built
	// already, which Start then runs instead of building one. Defaults to
	// none.
	Bootstraps map[string]string

	// RIE is the path of an aws-lambda-rie binary. Defaults to the one
	// BuildRIE builds (RIEPackage at RIEVersion) into BuildDir.
	RIE string

	// Go and Make are the commands that build. Default to "go" and "make".
	Go, Make string

	// Log receives the stack's own lines. Defaults to os.Stderr.
	Log io.Writer

	// ProgressLog receives a line as each build and each local server
	// starts, for a person waiting on a cold build; the line as each ends,
	// with its time, goes to Log. Defaults to Log.
	ProgressLog io.Writer

	// FunctionOutput receives the functions' output, each line prefixed
	// with the function and its environment. Defaults to Log.
	FunctionOutput io.Writer

	// ServerLog receives the local servers' output. Defaults to Log.
	ServerLog io.Writer

	// AccessLog receives one line per HTTP request and per SQS batch.
	// Defaults to Log.
	AccessLog io.Writer
}

func (o *Options) setDefaults() error {
	if o.Template == "" {
		o.Template = "template.yaml"
	}
	abs, err := filepath.Abs(o.Template)
	if err != nil {
		return err
	}
	o.Template = abs
	if o.StackName == "" {
		o.StackName = "idem-local"
	}
	if o.Region == "" {
		o.Region = os.Getenv("AWS_REGION")
	}
	if o.Region == "" {
		o.Region = "us-east-1"
	}
	if o.DynamoDBEndpoint == "" {
		o.DynamoDBEndpoint = os.Getenv("AWS_ENDPOINT_URL_DYNAMODB")
	}
	if o.SQSEndpoint == "" {
		o.SQSEndpoint = os.Getenv("AWS_ENDPOINT_URL_SQS")
	}
	if o.APIAddr == "" {
		o.APIAddr = "127.0.0.1:3000"
	}
	if o.ReceiptsAddr == "" {
		o.ReceiptsAddr = "127.0.0.1:0"
	}
	if o.TracesAddr == "" {
		o.TracesAddr = "127.0.0.1:0"
	}
	if o.Instances < 1 {
		o.Instances = 2
	}
	if o.PollWait <= 0 {
		o.PollWait = 20 * time.Second
	}
	if o.BuildDir == "" {
		o.BuildDir = filepath.Join(filepath.Dir(o.Template), "bin", "local")
	}
	if o.BuildDir, err = filepath.Abs(o.BuildDir); err != nil {
		return err
	}
	bootstraps := make(map[string]string, len(o.Bootstraps))
	for id, path := range o.Bootstraps {
		if bootstraps[id], err = filepath.Abs(path); err != nil {
			return err
		}
	}
	o.Bootstraps = bootstraps
	if o.Go == "" {
		o.Go = "go"
	}
	if o.Make == "" {
		o.Make = "make"
	}
	if o.Log == nil {
		o.Log = os.Stderr
	}
	if o.ProgressLog == nil {
		o.ProgressLog = o.Log
	}
	if o.FunctionOutput == nil {
		o.FunctionOutput = o.Log
	}
	if o.ServerLog == nil {
		o.ServerLog = o.Log
	}
	if o.AccessLog == nil {
		o.AccessLog = o.Log
	}
	return nil
}
