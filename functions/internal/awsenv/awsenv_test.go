package awsenv_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/idemkit/kit/functions/internal/awsenv"
)

var errSent = errors.New("request captured")

// capture records where each request goes, and its signing key id, and
// sends none.
type capture struct{ url, auth string }

func (c *capture) Do(req *http.Request) (*http.Response, error) {
	c.url, c.auth = req.URL.Scheme+"://"+req.URL.Host, req.Header.Get("Authorization")
	return nil, errSent
}

// TestClientFromLambdasEnvironment builds the DynamoDB client as the
// functions' main.go do and checks where its requests go and how they are
// signed: the template's empty AWS_ENDPOINT_URL_DYNAMODB means AWS's own.
func TestClientFromLambdasEnvironment(t *testing.T) {
	base := map[string]string{"AWS_REGION": "eu-west-1", "AWS_ACCESS_KEY_ID": "ASIAEXAMPLE", "AWS_SECRET_ACCESS_KEY": "s", "AWS_SESSION_TOKEN": "tok"}
	for _, tc := range []struct {
		name string
		env  map[string]string
		want string
	}{
		{"no endpoint", nil, "https://dynamodb.eu-west-1.amazonaws.com"},
		{"the template's empty value", map[string]string{"AWS_ENDPOINT_URL_DYNAMODB": ""}, "https://dynamodb.eu-west-1.amazonaws.com"},
		{"sam local's env.json", map[string]string{"AWS_ENDPOINT_URL_DYNAMODB": "http://127.0.0.1:8000"}, "http://127.0.0.1:8000"},
		{"empty service, global set", map[string]string{"AWS_ENDPOINT_URL_DYNAMODB": "", "AWS_ENDPOINT_URL": "http://127.0.0.1:4566"}, "http://127.0.0.1:4566"},
		{"service over global", map[string]string{"AWS_ENDPOINT_URL_DYNAMODB": "http://127.0.0.1:8000", "AWS_ENDPOINT_URL": "http://127.0.0.1:4566"}, "http://127.0.0.1:8000"},
		{"ignored", map[string]string{"AWS_ENDPOINT_URL_DYNAMODB": "http://127.0.0.1:8000", "AWS_IGNORE_CONFIGURED_ENDPOINT_URLS": "true"}, "https://dynamodb.eu-west-1.amazonaws.com"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			getenv := func(k string) string {
				if v, ok := tc.env[k]; ok {
					return v
				}
				return base[k]
			}
			cfg, err := awsenv.Config(getenv)
			if err != nil {
				t.Fatal(err)
			}
			hc := &capture{}
			client := dynamodb.NewFromConfig(cfg, func(o *dynamodb.Options) {
				o.BaseEndpoint = awsenv.Endpoint(getenv, "DYNAMODB")
				o.HTTPClient, o.Retryer = hc, aws.NopRetryer{}
			})
			if _, err := client.ListTables(context.Background(), &dynamodb.ListTablesInput{}); !errors.Is(err, errSent) {
				t.Fatalf("expect the request captured, got %v", err)
			}
			if hc.url != tc.want || !strings.Contains(hc.auth, "Credential=ASIAEXAMPLE/") || !strings.Contains(hc.auth, "/eu-west-1/dynamodb/") {
				t.Errorf("want a request to %s signed by ASIAEXAMPLE in eu-west-1, got %s (%s)", tc.want, hc.url, hc.auth)
			}
		})
	}
}

func TestConfigSaysWhatIsMissing(t *testing.T) {
	_, err := awsenv.Config(func(string) string { return "" })
	if err == nil || !strings.Contains(err.Error(), "AWS_REGION") || !strings.Contains(err.Error(), "AWS_ACCESS_KEY_ID") {
		t.Errorf("want an error naming the variables, got %v", err)
	}
}

// TestEndpointSQS: the relay's SQS client reads AWS_ENDPOINT_URL_SQS, else
// AWS_ENDPOINT_URL; an empty value is no value.
func TestEndpointSQS(t *testing.T) {
	for _, tc := range []struct {
		name string
		env  map[string]string
		want string // "" for nil, AWS's own
	}{
		{"unset", nil, ""},
		{"empty", map[string]string{"AWS_ENDPOINT_URL_SQS": ""}, ""},
		{"set", map[string]string{"AWS_ENDPOINT_URL_SQS": "http://127.0.0.1:9324"}, "http://127.0.0.1:9324"},
		{"empty service, global set", map[string]string{"AWS_ENDPOINT_URL_SQS": "", "AWS_ENDPOINT_URL": "http://127.0.0.1:4566"}, "http://127.0.0.1:4566"},
		{"service over global", map[string]string{"AWS_ENDPOINT_URL_SQS": "http://127.0.0.1:9324", "AWS_ENDPOINT_URL": "http://127.0.0.1:4566"}, "http://127.0.0.1:9324"},
		{"another service's", map[string]string{"AWS_ENDPOINT_URL_DYNAMODB": "http://127.0.0.1:8000"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := aws.ToString(awsenv.Endpoint(func(k string) string { return tc.env[k] }, "SQS"))
			if got != tc.want {
				t.Errorf("expect %q, got %q", tc.want, got)
			}
		})
	}
}
