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
	// The local tooling; the library's own shared code (such as the
	// outbox's wire format) lives beside it under idem/internal.
	tooling := mod + "idem/internal/{chaos,localdynamo,localstack,receipts,testphase}"
	for _, tc := range []struct {
		pkg    string
		refuse []string // import path prefixes it must not reach
	}{
		{"idem", []string{mod + "idem/sqsconsumer", mod + "idem/webhook", mod + "idem/emf", mod + "idem/idemtest", tooling, mod + "idem/stream", mod + "idem/outbox", mod + "functions",
			"github.com/aws/aws-sdk-go-v2/service/sqs", "github.com/aws/aws-sdk-go-v2/service/eventbridge"}},
		{"idem/stream", []string{mod + "idem/sqsconsumer", mod + "idem/webhook", mod + "idem/outbox", tooling, mod + "functions"}},
		{"idem/outbox", []string{mod + "idem/sqsconsumer", mod + "idem/webhook", mod + "idem/stream", tooling, mod + "functions"}},
		{"idem/emf", []string{mod + "idem/sqsconsumer", mod + "idem/webhook", tooling}},
		{"idem/sqsconsumer", []string{mod + "idem/webhook", tooling, mod + "functions"}},
		{"idem/webhook", []string{mod + "idem/sqsconsumer", tooling, mod + "functions", "github.com/aws/aws-sdk-go-v2/service/ssm", "github.com/aws/aws-sdk-go-v2/service/secretsmanager"}},
		{"functions/queue", []string{tooling, mod + "idem/idemtest", mod + "idem/webhook", "gopkg.in/yaml.v3", "github.com/aws/aws-sdk-go-v2/config"}},
		{"functions/webhook", []string{tooling, mod + "idem/idemtest", mod + "idem/sqsconsumer", "gopkg.in/yaml.v3", "github.com/aws/aws-sdk-go-v2/config"}},
		{"functions/ledger", []string{tooling, mod + "idem/idemtest", mod + "idem/webhook", mod + "idem/outbox", "gopkg.in/yaml.v3", "github.com/aws/aws-sdk-go-v2/config"}},
		{"idem/cmd/idem", []string{tooling, mod + "idem/idemtest", mod + "functions"}},
		{"functions/relay", []string{tooling, mod + "idem/idemtest", mod + "idem/webhook", mod + "idem/sqsconsumer", "gopkg.in/yaml.v3", "github.com/aws/aws-sdk-go-v2/config"}},
	} {
		t.Run(tc.pkg, func(t *testing.T) {
			var refuse []string
			for _, p := range tc.refuse {
				refuse = append(refuse, expand(p)...)
			}
			for _, d := range deps(tc.pkg) {
				if slices.ContainsFunc(refuse, func(p string) bool { return d == p || strings.HasPrefix(d, p+"/") }) {
					t.Errorf("%s imports %s", tc.pkg, d)
				}
			}
		})
	}
}

// TestModTidy: go.mod and go.sum say what the code imports, and nothing
// else: go mod tidy would change neither.
func TestModTidy(t *testing.T) {
	goCmd, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go is not on PATH")
	}
	out, err := exec.Command(goCmd, "mod", "tidy", "-diff").CombinedOutput()
	if err != nil {
		t.Fatalf("go mod tidy would change go.mod or go.sum (run it):\n%s", out)
	}
}

// TestSpansLinkNoSDK: the library and its adapters use OpenTelemetry's
// API alone; no SDK and no exporter is linked into a user's binary unless
// the user installs one.
func TestSpansLinkNoSDK(t *testing.T) {
	goCmd, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go is not on PATH")
	}
	const mod = "github.com/idemkit/kit/"
	for _, pkg := range []string{"idem", "idem/sqsconsumer", "idem/webhook", "idem/stream", "idem/outbox"} {
		out, err := exec.Command(goCmd, "list", "-deps", mod+pkg).Output()
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range strings.Fields(string(out)) {
			if strings.HasPrefix(d, "go.opentelemetry.io/otel/sdk") || strings.HasPrefix(d, "go.opentelemetry.io/otel/exporters") || strings.HasPrefix(d, "google.golang.org/grpc") {
				t.Errorf("%s links %s", pkg, d)
			}
		}
	}
}

// expand reads one {a,b} group in a path: "x/{a,b}" is x/a and x/b.
func expand(p string) []string {
	open, end := strings.Index(p, "{"), strings.Index(p, "}")
	if open < 0 || end < open {
		return []string{p}
	}
	var out []string
	for alt := range strings.SplitSeq(p[open+1:end], ",") {
		out = append(out, p[:open]+alt+p[end+1:])
	}
	return out
}

// TestNoToolOnlyModules: a module that requires the kit gets the kit's
// requirements in its graph (go list -m all); none may be there for the
// tooling alone, such as the Lambda emulator's.
func TestNoToolOnlyModules(t *testing.T) {
	goCmd, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go is not on PATH: the module graph is read with go list -m all")
	}
	out, err := exec.Command(goCmd, "list", "-m", "all").Output()
	if err != nil {
		t.Fatalf("go list -m all: %v", err)
	}
	for _, m := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		path := strings.Fields(m)[0]
		for _, tool := range []string{
			"github.com/aws/aws-lambda-runtime-interface-emulator", "github.com/go-chi/", "github.com/sirupsen/logrus",
			"github.com/jessevdk/go-flags", "github.com/orcaman/concurrent-map", "github.com/santhosh-tekuri/jsonschema",
			"github.com/stretchr/objx",
			// github.com/google/uuid is no longer the emulator's alone: the
			// OpenTelemetry SDK the kit's span tests record with needs it
			// (a user's binary links neither: TestSpansLinkNoSDK).
			// service/sqs is no longer tooling alone: idem/outbox's relay
			// sends with it (and the module graph is the module's, not a
			// binary's: a function that does not import idem/outbox links
			// neither SQS nor EventBridge).
		} {
			if strings.HasPrefix(path, tool) {
				t.Errorf("go.mod brings %s into every user's module graph; only the tooling needs it", path)
			}
		}
	}
	t.Logf("%d modules in the graph", strings.Count(string(out), "\n"))
}
