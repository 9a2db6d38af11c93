package secrets

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
)

// ParameterAPI is the one SSM Parameter Store call Env makes;
// *ssm.Client implements it.
type ParameterAPI interface {
	GetParameter(ctx context.Context, params *ssm.GetParameterInput, optFns ...func(*ssm.Options)) (*ssm.GetParameterOutput, error)
}

// SecretAPI is the one Secrets Manager call Env makes;
// *secretsmanager.Client implements it.
type SecretAPI interface {
	GetSecretValue(ctx context.Context, params *secretsmanager.GetSecretValueInput, optFns ...func(*secretsmanager.Options)) (*secretsmanager.GetSecretValueOutput, error)
}

// Env reads signing secrets at cold start. For a name such as
// STRIPE_WEBHOOK_SECRET, Load reads, first match wins:
//
//   - $STRIPE_WEBHOOK_SECRET, the secrets themselves (for local runs);
//   - $STRIPE_WEBHOOK_SECRET_PARAMETER, the name of an SSM parameter
//     (a SecureString, read with decryption);
//   - $STRIPE_WEBHOOK_SECRET_ID, the id or ARN of a Secrets Manager secret
//     (its SecretString).
//
// Each holds one secret or a comma-separated list, for rotation: deliveries
// signed with any of them verify. A deployed template names the parameter or
// secret, never the value.
type Env struct {
	// Getenv reads the environment. Defaults to os.Getenv.
	Getenv func(string) string

	// Parameters reads SSM parameters; needed only when a *_PARAMETER
	// variable is set. Defaults to nil.
	Parameters ParameterAPI

	// Secrets reads Secrets Manager secrets; needed only when a *_ID
	// variable is set. Defaults to nil.
	Secrets SecretAPI
}

// Load returns the secrets configured for name, or none when none of the
// three variables is set. A variable that is set but yields no secret is an
// error, so a typo cannot turn verification off. Errors name variables and
// parameters, never values.
func (e Env) Load(ctx context.Context, name string) ([]string, error) {
	getenv := e.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	if v := getenv(name); v != "" {
		return split(name, v)
	}
	if p := getenv(name + "_PARAMETER"); p != "" {
		if e.Parameters == nil {
			return nil, fmt.Errorf("secrets: %s_PARAMETER is set but no SSM client was given", name)
		}
		out, err := e.Parameters.GetParameter(ctx, &ssm.GetParameterInput{Name: aws.String(p), WithDecryption: aws.Bool(true)})
		if err != nil {
			return nil, fmt.Errorf("secrets: %s_PARAMETER: read SSM parameter %q: %w", name, p, err)
		}
		if out == nil || out.Parameter == nil {
			return nil, fmt.Errorf("secrets: %s_PARAMETER: SSM parameter %q has no value", name, p)
		}
		return split(fmt.Sprintf("SSM parameter %q (%s_PARAMETER)", p, name), aws.ToString(out.Parameter.Value))
	}
	if id := getenv(name + "_ID"); id != "" {
		if e.Secrets == nil {
			return nil, fmt.Errorf("secrets: %s_ID is set but no Secrets Manager client was given", name)
		}
		out, err := e.Secrets.GetSecretValue(ctx, &secretsmanager.GetSecretValueInput{SecretId: aws.String(id)})
		if err != nil {
			return nil, fmt.Errorf("secrets: %s_ID: read secret %q: %w", name, id, err)
		}
		if out == nil || out.SecretString == nil {
			return nil, fmt.Errorf("secrets: %s_ID: secret %q has no SecretString", name, id)
		}
		return split(fmt.Sprintf("secret %q (%s_ID)", id, name), *out.SecretString)
	}
	return nil, nil
}

func split(what, v string) ([]string, error) {
	var secrets []string
	for s := range strings.SplitSeq(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			secrets = append(secrets, s)
		}
	}
	if len(secrets) == 0 {
		return nil, errors.New("secrets: " + what + " is set but holds no secret")
	}
	return secrets, nil
}
