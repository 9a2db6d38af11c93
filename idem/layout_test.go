package idem_test

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// TestDependenciesPointOneWay: functions → adapters → core, the tooling
// apart. The core imports no adapter, the adapters not each other, and no
// package a function links imports the local tooling, its SQS client or
// YAML reader.
func TestDependenciesPointOneWay(t *testing.T) {
	goCmd, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go is not on PATH: the layout is checked with go list -deps")
	}
	const mod = "github.com/idemkit/kit/"
	deps := func(pkg string) []string {
		t.Helper()
		out, err := exec.Command(goCmd, "list", "-deps", mod+pkg).Output()
		if err != nil {
			t.Fatalf("go list -deps %s: %v", pkg, err)
		}
		return strings.Fields(string(out))
	}
	// The names refused below are real: the secrets package reaches them.
	for _, client := range []string{"github.com/aws/aws-sdk-go-v2/service/ssm", "github.com/aws/aws-sdk-go-v2/service/secretsmanager"} {
		if !slices.Contains(deps("idem/webhook/secrets"), client) {
			t.Errorf("idem/webhook/secrets does not import %s: is its name right?", client)
		}
	}
	for _, tc := range []struct {
		pkg    string
		refuse []string // import path prefixes it must not reach
	}{
		{"idem", []string{mod + "idem/sqsconsumer", mod + "idem/webhook", mod + "idem/emf", mod + "idem/idemtest", mod + "idem/internal", mod + "functions"}},
		{"idem/emf", []string{mod + "idem/sqsconsumer", mod + "idem/webhook", mod + "idem/internal"}},
		{"idem/sqsconsumer", []string{mod + "idem/webhook", mod + "idem/internal", mod + "functions"}},
		{"idem/webhook", []string{mod + "idem/sqsconsumer", mod + "idem/internal", mod + "functions", "github.com/aws/aws-sdk-go-v2/service/ssm", "github.com/aws/aws-sdk-go-v2/service/secretsmanager"}},
		{"functions/queue", []string{mod + "idem/internal", mod + "idem/idemtest", mod + "idem/webhook", "github.com/aws/aws-sdk-go-v2/service/sqs", "gopkg.in/yaml.v3", "github.com/aws/aws-sdk-go-v2/config"}},
		{"functions/webhook", []string{mod + "idem/internal", mod + "idem/idemtest", mod + "idem/sqsconsumer", "github.com/aws/aws-sdk-go-v2/service/sqs", "gopkg.in/yaml.v3", "github.com/aws/aws-sdk-go-v2/config"}},
	} {
		t.Run(tc.pkg, func(t *testing.T) {
			for _, d := range deps(tc.pkg) {
				if slices.ContainsFunc(tc.refuse, func(p string) bool { return d == p || strings.HasPrefix(d, p+"/") }) {
					t.Errorf("%s imports %s", tc.pkg, d)
				}
			}
		})
	}
}
