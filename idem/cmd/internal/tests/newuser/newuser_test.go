package newuser_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestANewModule runs testdata/consumer's tests in a module of their own,
// and builds README.md's programs there and runs its tests.
func TestANewModule(t *testing.T) {
	goCmd, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go is not on PATH")
	}
	root, err := filepath.Abs("../../../../..")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	write := func(name, text string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// The README's programs import SDK modules the library does not (its
	// config): they are required at the versions the project's functions
	// use, so that go mod tidy resolves no "latest", which changes with the
	// proxy's day and not with this tree.
	fmod, err := os.ReadFile(filepath.Join(root, "functions", "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	require := "require (\n\tgithub.com/idemkit/kit v0.0.0\n"
	for _, m := range regexp.MustCompile(`(?m)^\s+(github\.com/aws/\S+) (v\S+)`).FindAllStringSubmatch(string(fmod), -1) {
		require += "\t" + m[1] + " " + m[2] + "\n"
	}
	write("go.mod", "module example.com/consumer\n\ngo 1.26\n\n"+require+")\n\nreplace github.com/idemkit/kit => "+root+"\n")
	tests, err := filepath.Glob("testdata/consumer/*.go")
	if err != nil || len(tests) == 0 {
		t.Fatalf("no tests in testdata/consumer: %v", err)
	}
	for _, f := range tests {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		write(filepath.Base(f), string(b))
	}
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	programs := regexp.MustCompile("(?s)```go\n(package main\n.*?)```").FindAllStringSubmatch(string(readme), -1)
	for i, p := range programs {
		write(fmt.Sprintf("readme/program%d/main.go", i+1), p[1])
	}
	// The README's test files open with their name: they go beside the
	// first program's main.go, whose types they use, and run with the
	// module's tests.
	readmeTests := regexp.MustCompile("(?s)```go\n(// (\\w+_test\\.go)[^\n]*\npackage main\n.*?)```").FindAllStringSubmatch(string(readme), -1)
	if len(programs) == 0 || len(readmeTests) == 0 {
		t.Fatalf("README.md: want its programs and its test files (a go block opening with \"// name_test.go\"), found %d and %d", len(programs), len(readmeTests))
	}
	for _, f := range readmeTests {
		write("readme/program1/"+f[2], f[1])
	}
	t.Logf("%d test files, %d README programs, %d README test files", len(tests), len(programs), len(readmeTests))
	run := func(args ...string) {
		t.Helper()
		cmd := exec.Command(goCmd, args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("go %s in the new module: %v\n%s", strings.Join(args, " "), err, out)
		}
		t.Logf("go %s:\n%s", strings.Join(args, " "), out)
	}
	run("mod", "tidy")
	run("vet", "./...")
	run("test", "-count=1", "./...")
}
