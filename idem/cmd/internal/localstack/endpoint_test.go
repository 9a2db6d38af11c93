package localstack

import (
	"strings"
	"testing"
)

// The template declares AWS_ENDPOINT_URL_DYNAMODB (empty: AWS's endpoint)
// so that sam local can override it; the local stack's own endpoint must
// still reach the functions, over the template's value, whatever it is.
func TestEnvironLocalEndpointsOverTemplate(t *testing.T) {
	const local, localSQS = "http://127.0.0.1:41001", "http://127.0.0.1:41002"

	// What template.yaml's Globals give AWS_ENDPOINT_URL_DYNAMODB by default.
	tmpl, err := ReadTemplate("../../../../template.yaml")
	if err != nil {
		t.Fatal(err)
	}
	r, err := newResolver(tmpl, nil, map[string]string{"AWS::Region": "us-east-1", "AWS::AccountId": AccountID, "AWS::StackName": "s", "AWS::Partition": "aws"})
	if err != nil {
		t.Fatal(err)
	}
	declared, ok := mapOf(mapOf(tmpl.Globals["Function"]["Environment"])["Variables"])["AWS_ENDPOINT_URL_DYNAMODB"]
	if !ok {
		t.Fatal("template.yaml: Globals.Function.Environment.Variables declares no AWS_ENDPOINT_URL_DYNAMODB")
	}
	byDefault, err := r.evalString(declared)
	if err != nil {
		t.Fatal(err)
	}
	if byDefault != "" {
		t.Fatalf("template.yaml: AWS_ENDPOINT_URL_DYNAMODB defaults to %q, want empty", byDefault)
	}

	for _, tc := range []struct {
		name         string
		template     map[string]string // the function's resolved Environment.Variables
		sqs          string            // the stack's SQS endpoint
		optEnv       map[string]string // Options.Env
		wantDynamoDB string
		wantSQS      string
	}{
		{"template.yaml's default", map[string]string{"AWS_ENDPOINT_URL_DYNAMODB": byDefault}, "", nil, local, ""},
		{"a template's own endpoint", map[string]string{"AWS_ENDPOINT_URL_DYNAMODB": "http://dynamodb-local:8000", "AWS_ENDPOINT_URL_SQS": "http://sqs:9324"}, localSQS, nil, local, localSQS},
		{"not declared", map[string]string{"PROCESSED_TABLE": "p"}, localSQS, nil, local, localSQS},
		{"Options.Env last", map[string]string{"AWS_ENDPOINT_URL_DYNAMODB": ""}, "", map[string]string{"AWS_ENDPOINT_URL_DYNAMODB": "http://127.0.0.1:41003"}, "http://127.0.0.1:41003", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &Stack{Options: Options{Region: "us-east-1", Env: tc.optEnv}, DynamoDBEndpoint: local, SQSEndpoint: tc.sqs}
			env := envMap(s.environ(&FunctionSpec{LogicalID: "F", Handler: "bootstrap", Env: tc.template}, "/build/F/bootstrap"))
			if got := env["AWS_ENDPOINT_URL_DYNAMODB"]; got != tc.wantDynamoDB {
				t.Errorf("AWS_ENDPOINT_URL_DYNAMODB: expect %q, got %q", tc.wantDynamoDB, got)
			}
			if got := env["AWS_ENDPOINT_URL_SQS"]; got != tc.wantSQS {
				t.Errorf("AWS_ENDPOINT_URL_SQS: expect %q, got %q", tc.wantSQS, got)
			}
			for k, v := range tc.template {
				if !strings.HasPrefix(k, "AWS_ENDPOINT_URL") && env[k] != v {
					t.Errorf("%s: expect the template's %q, got %q", k, v, env[k])
				}
			}
		})
	}
}

func envMap(env []string) map[string]string {
	m := make(map[string]string, len(env))
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		m[k] = v
	}
	return m
}
