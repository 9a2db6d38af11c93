package credit_test

import (
	"context"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
)

// errSent stops a request at the HTTP client, after the SDK resolved its
// endpoint and before any network.
var errSent = errors.New("request captured")

// captureClient records the URL of each request and sends none.
type captureClient struct{ urls []string }

func (c *captureClient) Do(req *http.Request) (*http.Response, error) {
	c.urls = append(c.urls, req.URL.Scheme+"://"+req.URL.Host)
	return nil, errSent
}

// TestFunctionsDynamoDBEndpoint builds the DynamoDB client the way
// functions/*/main.go do (config.LoadDefaultConfig, then
// dynamodb.NewFromConfig) and checks where its requests go: to
// AWS_ENDPOINT_URL_DYNAMODB when it is set, as `sam local invoke --env-vars
// events/env.json` sets it, and to AWS's regional endpoint when it is empty,
// as template.yaml declares it by default.
func TestFunctionsDynamoDBEndpoint(t *testing.T) {
	const regional = "https://dynamodb.us-east-1.amazonaws.com"
	const unset = "\x00unset"
	for _, tc := range []struct {
		name          string
		dynamodb, all string // AWS_ENDPOINT_URL_DYNAMODB, AWS_ENDPOINT_URL
		want          string
	}{
		{"set", "http://127.0.0.1:8000", unset, "http://127.0.0.1:8000"},
		{"empty", "", unset, regional},
		{"empty, and AWS_ENDPOINT_URL empty", "", "", regional},
		{"unset", unset, unset, regional},
		// An empty service variable is no value: the SDK falls back to
		// AWS_ENDPOINT_URL, as when it is unset.
		{"empty, AWS_ENDPOINT_URL set", "", "http://127.0.0.1:4566", "http://127.0.0.1:4566"},
		{"set, over AWS_ENDPOINT_URL", "http://127.0.0.1:8000", "http://127.0.0.1:4566", "http://127.0.0.1:8000"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			isolateAWSConfig(t)
			for k, v := range map[string]string{"AWS_ENDPOINT_URL_DYNAMODB": tc.dynamodb, "AWS_ENDPOINT_URL": tc.all} {
				if v == unset {
					unsetenv(t, k)
				} else {
					t.Setenv(k, v)
				}
			}

			cfg, err := config.LoadDefaultConfig(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			hc := &captureClient{}
			client := dynamodb.NewFromConfig(cfg, func(o *dynamodb.Options) {
				o.HTTPClient = hc
				o.Retryer = aws.NopRetryer{}
			})
			_, err = client.ListTables(context.Background(), &dynamodb.ListTablesInput{})
			if !errors.Is(err, errSent) {
				t.Fatalf("expect the request captured, got %v", err)
			}
			if len(hc.urls) != 1 || hc.urls[0] != tc.want {
				t.Errorf("expect one request to %s, got %v", tc.want, hc.urls)
			}
		})
	}
}

// isolateAWSConfig leaves the SDK only the environment the test sets: a
// Region, static credentials, and no shared config or credentials file
// (whose profile could name endpoints of its own).
func isolateAWSConfig(t *testing.T) {
	t.Helper()
	missing := filepath.Join(t.TempDir(), "none")
	for k, v := range map[string]string{
		"AWS_CONFIG_FILE":             missing,
		"AWS_SHARED_CREDENTIALS_FILE": missing,
		"AWS_REGION":                  "us-east-1",
		"AWS_ACCESS_KEY_ID":           "test",
		"AWS_SECRET_ACCESS_KEY":       "test",
		"AWS_EC2_METADATA_DISABLED":   "true",
	} {
		t.Setenv(k, v)
	}
	for _, k := range []string{"AWS_PROFILE", "AWS_DEFAULT_PROFILE", "AWS_SESSION_TOKEN", "AWS_DEFAULT_REGION",
		"AWS_IGNORE_CONFIGURED_ENDPOINT_URLS", "AWS_USE_FIPS_ENDPOINT", "AWS_USE_DUALSTACK_ENDPOINT"} {
		unsetenv(t, k)
	}
}

// unsetenv unsets key for the test; t.Setenv restores it after.
func unsetenv(t *testing.T, key string) {
	t.Helper()
	t.Setenv(key, "")
	os.Unsetenv(key)
}
