package webhook_test

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// TestNoSecretClientsLinked: a webhook that takes its secret another way
// links neither the SSM nor the Secrets Manager client; they come only with
// idem/webhook/secrets (checked too, so the test can see them at all).
func TestNoSecretClientsLinked(t *testing.T) {
	goCmd, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go is not on PATH: the imports are checked with go list -deps")
	}
	clients := []string{"github.com/aws/aws-sdk-go-v2/service/ssm", "github.com/aws/aws-sdk-go-v2/service/secretsmanager"}
	for _, tc := range []struct {
		pkg   string
		links bool
	}{
		{"github.com/idemkit/kit/idem/webhook", false},
		{"github.com/idemkit/kit/idem/webhook/secrets", true},
	} {
		out, err := exec.Command(goCmd, "list", "-deps", tc.pkg).Output()
		if err != nil {
			t.Fatalf("go list -deps %s: %v", tc.pkg, err)
		}
		deps := strings.Fields(string(out))
		for _, c := range clients {
			if got := slices.Contains(deps, c); got != tc.links {
				t.Errorf("%s: expect it to link %s: %v, got %v", tc.pkg, c, tc.links, got)
			}
		}
	}
}
