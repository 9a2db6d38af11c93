package localstack

import (
	"math"
	"os"
	"path/filepath"
	"strconv"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/aws/aws-sdk-go-v2/service/sqs"
)

// credentialsFromEnv are the environment's credentials, or dummy ones that
// any local server accepts.
func credentialsFromEnv() aws.CredentialsProvider {
	key, secret := os.Getenv("AWS_ACCESS_KEY_ID"), os.Getenv("AWS_SECRET_ACCESS_KEY")
	if key == "" || secret == "" {
		key, secret = "test", "test"
	}
	return credentials.NewStaticCredentialsProvider(key, secret, os.Getenv("AWS_SESSION_TOKEN"))
}

func newDynamoDB(endpoint, region string) *dynamodb.Client {
	return dynamodb.New(dynamodb.Options{Region: region, BaseEndpoint: aws.String(endpoint), Credentials: credentialsFromEnv()})
}

func newSQS(endpoint, region string) *sqs.Client {
	return sqs.New(sqs.Options{Region: region, BaseEndpoint: aws.String(endpoint), Credentials: credentialsFromEnv()})
}

// environ is a function's whole environment: what Lambda sets, the
// template's variables, the local endpoints (over the template's) and
// credentials, the receipts service's URL, the local secrets, and
// Options.Env.
func (s *Stack) environ(spec *FunctionSpec, bootstrap string) []string {
	o := s.Options
	env := map[string]string{
		"PATH":                            os.Getenv("PATH"),
		"TZ":                              ":UTC",
		"LANG":                            "en_US.UTF-8",
		"LAMBDA_TASK_ROOT":                filepath.Dir(bootstrap),
		"_HANDLER":                        spec.Handler,
		"AWS_LAMBDA_FUNCTION_NAME":        spec.LogicalID,
		"AWS_LAMBDA_FUNCTION_VERSION":     "$LATEST",
		"AWS_LAMBDA_FUNCTION_MEMORY_SIZE": strconv.Itoa(spec.MemorySize),
		// The emulator reads the timeout in whole seconds.
		"AWS_LAMBDA_FUNCTION_TIMEOUT": strconv.Itoa(int(math.Ceil(spec.Timeout.Seconds()))),
		"AWS_LAMBDA_LOG_GROUP_NAME":   "/aws/lambda/" + spec.LogicalID,
		"AWS_LAMBDA_LOG_STREAM_NAME":  "local",
		"AWS_REGION":                  o.Region,
		"AWS_DEFAULT_REGION":          o.Region,
		"AWS_EC2_METADATA_DISABLED":   "true",
	}
	key, secret := os.Getenv("AWS_ACCESS_KEY_ID"), os.Getenv("AWS_SECRET_ACCESS_KEY")
	if key == "" || secret == "" || (o.DynamoDBEndpoint == "" && o.SQSEndpoint == "") {
		key, secret = "test", "test" // the local servers take any
	}
	env["AWS_ACCESS_KEY_ID"], env["AWS_SECRET_ACCESS_KEY"] = key, secret
	if spec.LogFormat != "" {
		env["AWS_LAMBDA_LOG_FORMAT"] = spec.LogFormat
	}
	if spec.LogLevel != "" {
		env["AWS_LAMBDA_LOG_LEVEL"] = spec.LogLevel
	}
	for k, v := range spec.Env {
		env[k] = v
	}
	// The local endpoints over the template's: a template declares
	// AWS_ENDPOINT_URL_DYNAMODB empty (AWS's endpoint) for sam local to
	// override, and the tables are where the stack made them.
	env["AWS_ENDPOINT_URL_DYNAMODB"] = s.DynamoDBEndpoint
	if s.SQSEndpoint != "" {
		env["AWS_ENDPOINT_URL_SQS"] = s.SQSEndpoint
	}
	if s.Receipts != nil && s.wantsReceipts(spec) {
		env[receiptsEnv] = s.Receipts.URL()
	}
	for name, v := range o.Secrets {
		_, a := spec.Env[name]
		_, b := spec.Env[name+"_PARAMETER"]
		_, c := spec.Env[name+"_ID"]
		if a || b || c {
			env[name] = v
			delete(env, name+"_PARAMETER")
			delete(env, name+"_ID")
		}
	}
	for k, v := range o.Env {
		env[k] = v
	}
	out := make([]string, 0, len(env))
	for _, k := range sortedKeys(env) {
		out = append(out, k+"="+env[k])
	}
	return out
}
