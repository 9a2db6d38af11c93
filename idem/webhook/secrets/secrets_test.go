package secrets_test

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	ssmtypes "github.com/aws/aws-sdk-go-v2/service/ssm/types"

	"github.com/idemkit/kit/idem/webhook/secrets"
)

// fakeSSM and fakeSecrets hold values by name; they stand for the AWS
// services at cold start, not for any claim logic.
type fakeSSM map[string]string

func (f fakeSSM) GetParameter(_ context.Context, in *ssm.GetParameterInput, _ ...func(*ssm.Options)) (*ssm.GetParameterOutput, error) {
	v, ok := f[aws.ToString(in.Name)]
	if !ok || !aws.ToBool(in.WithDecryption) {
		return nil, errors.New("ParameterNotFound")
	}
	return &ssm.GetParameterOutput{Parameter: &ssmtypes.Parameter{Value: aws.String(v)}}, nil
}

type fakeSecrets map[string]string

func (f fakeSecrets) GetSecretValue(_ context.Context, in *secretsmanager.GetSecretValueInput, _ ...func(*secretsmanager.Options)) (*secretsmanager.GetSecretValueOutput, error) {
	v, ok := f[aws.ToString(in.SecretId)]
	if !ok {
		return nil, errors.New("ResourceNotFoundException")
	}
	return &secretsmanager.GetSecretValueOutput{SecretString: aws.String(v)}, nil
}

func TestEnv(t *testing.T) {
	params := fakeSSM{"/webhooks/stripe": "whsec_a, whsec_b", "/webhooks/blank": " , "}
	vault := fakeSecrets{"stripe-secret": "whsec_c"}
	for _, tc := range []struct {
		name string
		env  map[string]string
		want []string
		err  string
	}{
		{"unset", nil, nil, ""},
		{"value", map[string]string{"STRIPE_WEBHOOK_SECRET": "whsec_x"}, []string{"whsec_x"}, ""},
		{"list", map[string]string{"STRIPE_WEBHOOK_SECRET": "whsec_x,whsec_y"}, []string{"whsec_x", "whsec_y"}, ""},
		{"value wins", map[string]string{"STRIPE_WEBHOOK_SECRET": "whsec_x", "STRIPE_WEBHOOK_SECRET_PARAMETER": "/webhooks/stripe"}, []string{"whsec_x"}, ""},
		{"parameter", map[string]string{"STRIPE_WEBHOOK_SECRET_PARAMETER": "/webhooks/stripe"}, []string{"whsec_a", "whsec_b"}, ""},
		{"parameter wins", map[string]string{"STRIPE_WEBHOOK_SECRET_PARAMETER": "/webhooks/stripe", "STRIPE_WEBHOOK_SECRET_ID": "stripe-secret"}, []string{"whsec_a", "whsec_b"}, ""},
		{"secret", map[string]string{"STRIPE_WEBHOOK_SECRET_ID": "stripe-secret"}, []string{"whsec_c"}, ""},
		{"commas only", map[string]string{"STRIPE_WEBHOOK_SECRET": ","}, nil, "STRIPE_WEBHOOK_SECRET is set but holds no secret"},
		{"blank parameter", map[string]string{"STRIPE_WEBHOOK_SECRET_PARAMETER": "/webhooks/blank"}, nil, "holds no secret"},
		{"missing parameter", map[string]string{"STRIPE_WEBHOOK_SECRET_PARAMETER": "/nope"}, nil, `STRIPE_WEBHOOK_SECRET_PARAMETER: read SSM parameter "/nope"`},
		{"missing secret", map[string]string{"STRIPE_WEBHOOK_SECRET_ID": "nope"}, nil, `STRIPE_WEBHOOK_SECRET_ID: read secret "nope"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			se := secrets.Env{Getenv: func(k string) string { return tc.env[k] }, Parameters: params, Secrets: vault}
			got, err := se.Load(context.Background(), "STRIPE_WEBHOOK_SECRET")
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("expect an error saying %q, got %v", tc.err, err)
				}
				if strings.Contains(err.Error(), "whsec_") {
					t.Fatalf("the error reveals a secret: %v", err)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("expect %v, got %v, %v", tc.want, got, err)
			}
		})
	}
}

func TestEnvWithoutClients(t *testing.T) {
	env := map[string]string{"WEBHOOK_SECRET_PARAMETER": "/p", "STRIPE_WEBHOOK_SECRET_ID": "s"}
	se := secrets.Env{Getenv: func(k string) string { return env[k] }}
	for _, name := range []string{"WEBHOOK_SECRET", "STRIPE_WEBHOOK_SECRET"} {
		if _, err := se.Load(context.Background(), name); err == nil || !strings.Contains(err.Error(), "no ") {
			t.Errorf("%s: expect an error naming the missing client, got %v", name, err)
		}
	}
}
