package localstack

import (
	"bytes"
	"context"
	"crypto/sha256"
	"debug/buildinfo"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"time"
)

// The Lambda Runtime Interface Emulator the functions run under locally:
// its command's package and the one version the tooling builds, written
// here only. BuildRIE builds it with `go install RIEPackage@RIEVersion`,
// outside this module, so neither it nor its modules enter this module's
// go.mod, nor a user's module graph.
const (
	RIEPackage = "github.com/aws/aws-lambda-runtime-interface-emulator/cmd/aws-lambda-rie"
	RIEVersion = "v0.0.0-20261030222936-bef5c4ba774d"
)

// buildFunction builds a function's bootstrap for this machine as `sam
// build` builds it for Lambda. With BuildMethod makefile that is the same
// Makefile target, `make build-<LogicalId> ARTIFACTS_DIR=…`, told to build
// for this machine with LAMBDA_GOOS and LAMBDA_GOARCH; with go1.x it is
// `go build` of the CodeUri. It says what it builds as it starts, and as
// it ends its time, or that the bootstrap was up to date: a cold build
// takes minutes.
func (s *Stack) buildFunction(ctx context.Context, id string, props map[string]any, metadata map[string]any) (string, error) {
	o := &s.Options
	out := filepath.Join(o.BuildDir, id)
	if err := os.MkdirAll(out, 0o755); err != nil {
		return "", fmt.Errorf("localstack: %w", err)
	}
	bootstrap := filepath.Join(out, "bootstrap")
	var (
		cmd *exec.Cmd
		how string
	)
	switch method := scalarString(metadata["BuildMethod"]); method {
	case "makefile":
		cmd = exec.CommandContext(ctx, o.Make, "--no-print-directory", "build-"+id,
			"ARTIFACTS_DIR="+out, "LAMBDA_GOOS="+runtime.GOOS, "LAMBDA_GOARCH="+runtime.GOARCH, "GO="+o.Go)
		cmd.Dir = codeDir(o, props)
		how = "make build-" + id
	case "go1.x", "":
		cmd = exec.CommandContext(ctx, o.Go, "build", "-tags", "lambda.norpc", "-trimpath", "-o", bootstrap, ".")
		cmd.Dir = codeDir(o, props)
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		how = "go build in " + cmd.Dir
	default:
		return "", fmt.Errorf("localstack: %s: BuildMethod %q: the local stack builds makefile and go1.x functions", id, method)
	}
	begin := time.Now()
	s.progressf("building %s (%s)…", id, how)
	before, _ := fileDigest(bootstrap)
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("localstack: build %s: %s: %w\n%s", id, strings.Join(cmd.Args, " "), err, bytes.TrimSpace(b))
	}
	after, err := fileDigest(bootstrap)
	if err != nil {
		return "", fmt.Errorf("localstack: build %s wrote no %s", id, bootstrap)
	}
	if after == before {
		s.logf("%s is up to date (%v)", id, since(begin))
	} else {
		s.logf("built %s in %v", id, since(begin))
	}
	return bootstrap, nil
}

// fileDigest is the SHA-256 of a file's bytes: go build writes the
// bootstrap again when nothing changed, so its time cannot tell.
func fileDigest(path string) ([sha256.Size]byte, error) {
	var sum [sha256.Size]byte
	f, err := os.Open(path)
	if err != nil {
		return sum, err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return sum, err
	}
	h.Sum(sum[:0])
	return sum, nil
}

func since(t time.Time) time.Duration { return time.Since(t).Round(100 * time.Millisecond) }

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

// buildRIE is Options.RIE, or the emulator BuildRIE builds into the build
// directory, said as its functions' builds are.
func (s *Stack) buildRIE(ctx context.Context) (string, error) {
	o := &s.Options
	if o.RIE != "" {
		return o.RIE, nil
	}
	if path := filepath.Join(o.BuildDir, "aws-lambda-rie"); rieBuilt(path) {
		s.logf("the Lambda Runtime Interface Emulator is up to date (%s)", path)
		return path, nil
	}
	begin := time.Now()
	s.progressf("building the Lambda Runtime Interface Emulator (go install %s@%s)…", RIEPackage, RIEVersion)
	path, err := BuildRIE(ctx, o.Go, o.BuildDir)
	if err == nil {
		s.logf("built the Lambda Runtime Interface Emulator in %v", since(begin))
	}
	return path, err
}

// BuildRIE builds the emulator, RIEPackage at RIEVersion, for this machine
// into dir/aws-lambda-rie and returns that path. An emulator built from
// RIEVersion for this machine there already is kept, so a build directory
// builds it once. goCmd is the go command; "" is "go".
//
// The build is `go install RIEPackage@RIEVersion`: it reads no go.mod of
// this module or the caller's, and needs the module from the Go module
// proxy (or the module cache) and Go 1.26.6 or later, the emulator's go
// line (with GOTOOLCHAIN=auto the go command fetches such a toolchain).
func BuildRIE(ctx context.Context, goCmd, dir string) (string, error) {
	if goCmd == "" {
		goCmd = "go"
	}
	path := filepath.Join(dir, "aws-lambda-rie")
	if rieBuilt(path) {
		return path, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("localstack: %w", err)
	}
	// go install writes into a directory of this build's own, then the
	// binary is renamed into place: builds racing on one directory each
	// leave a whole binary.
	tmp, err := os.MkdirTemp(dir, ".aws-lambda-rie-")
	if err != nil {
		return "", fmt.Errorf("localstack: %w", err)
	}
	defer os.RemoveAll(tmp)
	cmd := exec.CommandContext(ctx, goCmd, "install", RIEPackage+"@"+RIEVersion)
	cmd.Dir = tmp
	cmd.Env = append(os.Environ(),
		"GOBIN="+tmp,
		// For the machine that runs it (GOBIN refuses a cross-compiled
		// binary), and without cgo, as the functions are built: the
		// standard library's packages are then compiled once for both.
		"GOOS="+runtime.GOOS, "GOARCH="+runtime.GOARCH, "CGO_ENABLED=0",
		// pkg@version builds outside any module or workspace; a -mod or
		// -modfile flag meant for the caller's module would stop it.
		"GOWORK=off", "GOFLAGS="+installFlags(os.Getenv("GOFLAGS")))
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("localstack: build the Lambda Runtime Interface Emulator: %s: %w\n%s", strings.Join(cmd.Args, " "), err, bytes.TrimSpace(b))
	}
	if err := os.Rename(filepath.Join(tmp, "aws-lambda-rie"), path); err != nil {
		return "", fmt.Errorf("localstack: build the Lambda Runtime Interface Emulator: %w", err)
	}
	return path, nil
}

// rieBuilt reports whether path is an emulator built from RIEVersion for
// this machine.
func rieBuilt(path string) bool {
	info, err := buildinfo.ReadFile(path)
	if err != nil || info.Path != RIEPackage || info.Main.Version != RIEVersion {
		return false
	}
	want := map[string]string{"GOOS": runtime.GOOS, "GOARCH": runtime.GOARCH, "CGO_ENABLED": "0"}
	for _, s := range info.Settings {
		if v, ok := want[s.Key]; ok && v != s.Value {
			return false
		}
	}
	return true
}

// installFlags are GOFLAGS less the flags that name the main module's
// go.mod or vendor directory, which `go install pkg@version` rejects.
func installFlags(goflags string) string {
	var keep []string
	for _, f := range strings.Fields(goflags) {
		name, _, _ := strings.Cut(strings.TrimLeft(f, "-"), "=")
		if name != "mod" && name != "modfile" {
			keep = append(keep, f)
		}
	}
	return strings.Join(keep, " ")
}
