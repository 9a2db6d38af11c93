package localstack

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
)

// RIEPackage is the Go package of the Lambda Runtime Interface Emulator,
// a tool of this module (go.mod's tool directive).
const RIEPackage = "github.com/aws/aws-lambda-runtime-interface-emulator/cmd/aws-lambda-rie"

// buildFunction builds a function's bootstrap for this machine as `sam
// build` builds it for Lambda. With BuildMethod makefile that is the same
// Makefile target, `make build-<LogicalId> ARTIFACTS_DIR=…`, told to build
// for this machine with LAMBDA_GOOS and LAMBDA_GOARCH; with go1.x it is
// `go build` of the CodeUri.
func buildFunction(ctx context.Context, o *Options, id string, props map[string]any, metadata map[string]any) (string, error) {
	out := filepath.Join(o.BuildDir, id)
	if err := os.MkdirAll(out, 0o755); err != nil {
		return "", fmt.Errorf("localstack: %w", err)
	}
	bootstrap := filepath.Join(out, "bootstrap")
	var cmd *exec.Cmd
	switch method := scalarString(metadata["BuildMethod"]); method {
	case "makefile":
		cmd = exec.CommandContext(ctx, o.Make, "--no-print-directory", "build-"+id,
			"ARTIFACTS_DIR="+out, "LAMBDA_GOOS="+runtime.GOOS, "LAMBDA_GOARCH="+runtime.GOARCH, "GO="+o.Go)
		cmd.Dir = codeDir(o, props)
	case "go1.x", "":
		cmd = exec.CommandContext(ctx, o.Go, "build", "-tags", "lambda.norpc", "-o", bootstrap, ".")
		cmd.Dir = codeDir(o, props)
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	default:
		return "", fmt.Errorf("localstack: %s: BuildMethod %q: the local stack builds makefile and go1.x functions", id, method)
	}
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("localstack: build %s: %s: %w\n%s", id, strings.Join(cmd.Args, " "), err, bytes.TrimSpace(b))
	}
	if _, err := os.Stat(bootstrap); err != nil {
		return "", fmt.Errorf("localstack: build %s wrote no %s", id, bootstrap)
	}
	return bootstrap, nil
}

// codeDir is a function's CodeUri, relative to the template's directory.
func codeDir(o *Options, props map[string]any) string {
	uri, _ := props["CodeUri"].(string)
	if uri == "" {
		uri = "."
	}
	if filepath.IsAbs(uri) {
		return uri
	}
	return filepath.Join(filepath.Dir(o.Template), uri)
}

// buildRIE builds the emulator once, into the build directory.
func buildRIE(ctx context.Context, o *Options) (string, error) {
	if o.RIE != "" {
		return o.RIE, nil
	}
	path := filepath.Join(o.BuildDir, "aws-lambda-rie")
	cmd := exec.CommandContext(ctx, o.Go, "build", "-o", path, RIEPackage)
	cmd.Dir = filepath.Dir(o.Template)
	// Without cgo, as the functions are built: the standard library's
	// packages are then compiled once for both.
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("localstack: build the Lambda Runtime Interface Emulator: %w\n%s", err, bytes.TrimSpace(b))
	}
	return path, nil
}
