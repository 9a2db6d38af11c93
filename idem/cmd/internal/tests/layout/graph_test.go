package layout_test

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestUserModuleGraph: a module that imports every public package of the
// library has, in its module graph (go list -m all, as a user's go.mod and
// go.sum see it), the kit and exactly the modules a module importing what
// the library's own code imports would have: nothing that the library's
// tests, the tooling or the functions need alone.
func TestUserModuleGraph(t *testing.T) {
	abs, err := filepath.Abs(root)
	if err != nil {
		t.Fatal(err)
	}
	var public []string
	for _, p := range strings.Fields(goTool(t, root, "list", "./...")) {
		if !strings.Contains(p, "/internal") {
			public = append(public, p)
		}
	}
	// The packages of other modules the library's code links (no tests),
	// one importable package per module.
	uses := map[string]string{} // module → a package of it
	for _, line := range strings.Split(strings.TrimSpace(goTool(t, root, "list", "-deps", "-f", "{{if not .Standard}}{{.Module.Path}} {{.ImportPath}}{{end}}", "./...")), "\n") {
		mod, pkg, _ := strings.Cut(line, " ")
		if mod == kit || strings.Contains(pkg, "/internal") {
			continue
		}
		if _, ok := uses[mod]; !ok {
			uses[mod] = pkg
		}
	}
	gomod, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	requires := string(gomod[strings.Index(string(gomod), "require"):])

	user := newModule(t, "example.com/user", "require "+kit+" v0.0.0\nreplace "+kit+" => "+abs+"\n", public)
	var pkgs []string
	for _, p := range uses {
		pkgs = append(pkgs, p)
	}
	baseline := newModule(t, "example.com/baseline", requires, pkgs)

	got := graph(t, user)
	want := append(graph(t, baseline), kit)
	var extra, missing []string
	for _, m := range got {
		if !slices.Contains(want, m) {
			extra = append(extra, m)
		}
	}
	for _, m := range want {
		if !slices.Contains(got, m) {
			missing = append(missing, m)
		}
	}
	if len(extra) > 0 {
		t.Errorf("a user's module graph holds %v, which no package of the library links: the library's tests, the tooling or the functions bring them through the root go.mod", extra)
	}
	if len(missing) > 0 {
		t.Errorf("the baseline has %v and the user's graph not: is the baseline built right?", missing)
	}
	t.Logf("a module importing the library's %d public packages: %d modules in its graph, the kit and the %d that the library's code uses bring", len(public), len(got), len(want)-1)
}

// newModule writes a module that imports pkgs, and tidies it.
func newModule(t *testing.T, path, requires string, pkgs []string) string {
	t.Helper()
	dir := t.TempDir()
	var imports strings.Builder
	for _, p := range pkgs {
		fmt.Fprintf(&imports, "\t_ %q\n", p)
	}
	files := map[string]string{
		"go.mod":  "module " + path + "\n\ngo 1.26\n\n" + requires,
		"main.go": "package main\n\nimport (\n" + imports.String() + ")\n\nfunc main() {}\n",
	}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	goTool(t, dir, "mod", "tidy")
	return dir
}

// graph is a module's module graph, its own path left out, without versions.
func graph(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	for i, line := range strings.Split(strings.TrimSpace(goTool(t, dir, "list", "-m", "all")), "\n") {
		if i > 0 { // the first is the module itself
			out = append(out, strings.Fields(line)[0])
		}
	}
	return out
}
