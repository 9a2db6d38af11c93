// Package awsenv builds the reference functions' aws.Config from what
// Lambda puts in a function's environment: the Region, the execution
// role's credentials, and the endpoints AWS_ENDPOINT_URL_<SERVICE> and
// AWS_ENDPOINT_URL name (sam local, make local). In Lambda that is all
// config.LoadDefaultConfig finds too, and the SSO, STS and shared-file code
// it links weighs 2 MB in each bootstrap, a fifth of it, and its cold start.
// Code that runs anywhere else uses config.LoadDefaultConfig.
package awsenv

import (
	"errors"
	"os"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
)

// Config is the environment's Region and credentials; an error names what
// is missing.
func Config(getenv func(string) string) (aws.Config, error) {
	if getenv == nil {
		getenv = os.Getenv
	}
	region := getenv("AWS_REGION")
	if region == "" {
		region = getenv("AWS_DEFAULT_REGION")
	}
	key, secret := getenv("AWS_ACCESS_KEY_ID"), getenv("AWS_SECRET_ACCESS_KEY")
	var missing []string
	if region == "" {
		missing = append(missing, "AWS_REGION")
	}
	if key == "" || secret == "" {
		missing = append(missing, "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY")
	}
	if len(missing) > 0 {
		return aws.Config{}, errors.New("awsenv: the environment has no " + strings.Join(missing, " and no ") + ", which Lambda sets; elsewhere use config.LoadDefaultConfig")
	}
	return aws.Config{
		Region: region,
		// Lambda's credentials hold for the execution environment's life, as
		// config.LoadDefaultConfig would read them from the same variables.
		Credentials: credentials.NewStaticCredentialsProvider(key, secret, getenv("AWS_SESSION_TOKEN")),
	}, nil
}

// Endpoint is the endpoint the environment names for a service, by its
// variable suffix ("DYNAMODB", "SSM", "SECRETS_MANAGER"): AWS_ENDPOINT_URL_
// <service>, else AWS_ENDPOINT_URL, else nil for AWS's own. Empty values
// are no value, and AWS_IGNORE_CONFIGURED_ENDPOINT_URLS=true ignores both,
// as aws-sdk-go-v2 does.
func Endpoint(getenv func(string) string, service string) *string {
	if getenv == nil {
		getenv = os.Getenv
	}
	if strings.EqualFold(getenv("AWS_IGNORE_CONFIGURED_ENDPOINT_URLS"), "true") {
		return nil
	}
	for _, name := range []string{"AWS_ENDPOINT_URL_" + service, "AWS_ENDPOINT_URL"} {
		if v := getenv(name); v != "" {
			return aws.String(v)
		}
	}
	return nil
}
