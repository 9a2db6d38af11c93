package layout_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// root is the repository's top, from this package's directory.
const root = "../../../../.."

const kit = "github.com/idemkit/kit"

// goTool runs the go command in dir and returns its standard output.
func goTool(t *testing.T, dir string, args ...string) string {
	t.Helper()
	goCmd, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go is not on PATH: the layout is read with the go command")
	}
	cmd := exec.Command(goCmd, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=")
	out, err := cmd.Output()
	if err != nil {
		stderr := ""
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = string(ee.Stderr)
		}
		t.Fatalf("go %s in %s: %v\n%s", strings.Join(args, " "), dir, err, stderr)
	}
	return string(out)
}

// modules are the repository's modules: the directory of each go.mod.
var modules = []string{".", "functions", "idem/cmd"}

// TestModules: the repository has exactly the three modules, each tidy:
// go mod tidy would change neither its go.mod nor its go.sum.
func TestModules(t *testing.T) {
	var found []string
	err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == "testdata" || d.Name() == "node_modules" || d.Name() == "bin") {
			return filepath.SkipDir
		}
		if d.Name() == "go.mod" {
			rel, _ := filepath.Rel(root, filepath.Dir(path))
			found = append(found, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(found)
	want := slices.Sorted(slices.Values(modules))
	if !slices.Equal(found, want) {
		t.Errorf("modules at %v, want %v", found, want)
	}
	for _, m := range modules {
		t.Run(m, func(t *testing.T) { goTool(t, filepath.Join(root, m), "mod", "tidy", "-diff") })
	}
}

// TestTestOnlyPackages: a package under idem/cmd/internal/tests holds
// tests and its doc.go, nothing a program could link.
func TestTestOnlyPackages(t *testing.T) {
	dirs, err := filepath.Glob(filepath.Join(root, "idem/cmd/internal/tests/*"))
	if err != nil || len(dirs) == 0 {
		t.Fatalf("no test-only packages: %v", err)
	}
	for _, dir := range dirs {
		files, _ := filepath.Glob(filepath.Join(dir, "*.go"))
		for _, f := range files {
			if name := filepath.Base(f); name != "doc.go" && !strings.HasSuffix(name, "_test.go") {
				t.Errorf("%s: a test-only package holds only doc.go and tests", f)
			}
		}
		if _, err := os.Stat(filepath.Join(dir, "doc.go")); err != nil {
			t.Errorf("%s has no doc.go saying what it proves", dir)
		}
	}
}

// TestLibraryPackages: every package of the library that a user imports
// has a doc.go, and dependencies point one way: the core imports none of
// the library's other packages, none of those imports another (its own
// subpackages aside; idem/batch, the options the batch consumers share,
// beside the core; idemtest, which serves the tests of them all, may
// import any), and none links OpenTelemetry's SDK or an exporter (the user
// installs those). The packages are read from go list: a new one is under
// the rule the day it is added.
func TestLibraryPackages(t *testing.T) {
	pkgs := strings.Fields(goTool(t, root, "list", "./..."))
	var public []string
	for _, p := range pkgs {
		if !strings.HasPrefix(p, kit+"/idem") {
			t.Errorf("%s: the root module holds the library, under idem/", p)
		}
		if strings.Contains(p, "/internal") {
			continue
		}
		public = append(public, strings.TrimPrefix(p, kit+"/"))
		if _, err := os.Stat(filepath.Join(root, strings.TrimPrefix(p, kit+"/"), "doc.go")); err != nil {
			t.Errorf("%s has no doc.go", p)
		}
	}
	if len(public) < 2 {
		t.Fatalf("go list found %v: too few library packages to check", public)
	}
	for _, pkg := range public {
		t.Run(pkg, func(t *testing.T) {
			for _, d := range strings.Fields(goTool(t, root, "list", "-deps", kit+"/"+pkg)) {
				dep := strings.TrimPrefix(d, kit+"/")
				switch {
				case dep == pkg || !slices.Contains(public, dep):
				case pkg == "idem":
					t.Errorf("the core imports %s", d)
				case dep == "idem" || dep == "idem/batch" || strings.HasPrefix(dep, pkg+"/") || pkg == "idem/idemtest":
				default:
					t.Errorf("%s imports %s", pkg, d)
				}
				if strings.HasPrefix(d, "go.opentelemetry.io/otel/sdk") || strings.HasPrefix(d, "go.opentelemetry.io/otel/exporters") {
					t.Errorf("%s links %s", pkg, d)
				}
			}
		})
	}
}

// TestFunctionsAreWiring: each function's main.go is wiring, and no
// function links the test helpers.
func TestFunctionsAreWiring(t *testing.T) {
	mains, _ := filepath.Glob(filepath.Join(root, "functions/*/main.go"))
	if len(mains) == 0 {
		t.Fatal("no functions")
	}
	for _, m := range mains {
		b, err := os.ReadFile(m)
		if err != nil {
			t.Fatal(err)
		}
		if n := strings.Count(string(b), "\n"); n > 60 {
			t.Errorf("%s is %d lines: a function's main.go is wiring", m, n)
		}
		fn := filepath.Base(filepath.Dir(m))
		for _, d := range strings.Fields(goTool(t, filepath.Join(root, "functions"), "list", "-deps", "./"+fn)) {
			if d == kit+"/idem/idemtest" || strings.HasPrefix(d, kit+"/idem/cmd") {
				t.Errorf("functions/%s links %s", fn, d)
			}
		}
	}
}

// TestLocalServerApart: the local DynamoDB server (the package named
// localdynamo, found by go list) is test support: no runtime package —
// what the functions (functions/*/main.go) link — imports it, and none
// sits beside it in its parent directory, so a reader tells the two roles
// apart from the tree.
func TestLocalServerApart(t *testing.T) {
	var server string
	for _, line := range strings.Split(strings.TrimSpace(goTool(t, root, "list", "-f", "{{.Name}} {{.ImportPath}}", "./...")), "\n") {
		if name, pkg, _ := strings.Cut(line, " "); name == "localdynamo" {
			server = pkg
		}
	}
	if server == "" {
		t.Fatal("go list finds no package localdynamo in the root module: where is the local server?")
	}
	parent := server[:strings.LastIndex(server, "/")]
	args := []string{"list", "-deps", "-f", "{{.ImportPath}} {{join .Imports \" \"}}"}
	mains, _ := filepath.Glob(filepath.Join(root, "functions/*/main.go"))
	for _, m := range mains {
		args = append(args, "./"+filepath.Base(filepath.Dir(m)))
	}
	if len(mains) == 0 {
		t.Fatal("no functions")
	}
	runtime := 0
	for _, line := range strings.Split(strings.TrimSpace(goTool(t, filepath.Join(root, "functions"), args...)), "\n") {
		pkg, imports, _ := strings.Cut(line, " ")
		if !strings.HasPrefix(pkg, kit+"/idem/") {
			continue
		}
		runtime++
		if pkg == server || slices.Contains(strings.Fields(imports), server) {
			t.Errorf("%s, which the functions link, is or imports the local server %s", pkg, server)
		}
		if pkg[:strings.LastIndex(pkg, "/")] == parent {
			t.Errorf("the runtime package %s sits beside the local server %s", pkg, server)
		}
	}
	if runtime < 2 {
		t.Fatalf("the functions link %d of the library's packages: too few to check", runtime)
	}
}
