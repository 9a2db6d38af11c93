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
// and builds README.md's programs there.
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
	write("go.mod", "module example.com/consumer\n\ngo 1.26\n\nrequire github.com/idemkit/kit v0.0.0\n\nreplace github.com/idemkit/kit => "+root+"\n")
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
	t.Logf("%d test files, %d README programs", len(tests), len(programs))
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
