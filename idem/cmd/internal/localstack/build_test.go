package localstack

import (
	"context"
	"debug/buildinfo"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// BuildRIE installs the pinned emulator into the build directory and keeps
// it there: a second Start builds nothing, and a file that is not the
// pinned emulator is replaced.
func TestBuildRIE(t *testing.T) {
	path := testRIE(t) // BuildRIE into the tests' build directory
	info, err := buildinfo.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if info.Path != RIEPackage || info.Main.Version != RIEVersion {
		t.Errorf("expect %s@%s, got %s@%s", RIEPackage, RIEVersion, info.Path, info.Main.Version)
	}
	before, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}

	t.Run("kept", func(t *testing.T) {
		// A go command that cannot run proves nothing is built.
		again, err := BuildRIE(context.Background(), filepath.Join(t.TempDir(), "no-go"), filepath.Dir(path))
		if err != nil {
			t.Fatal(err)
		}
		after, err := os.Stat(again)
		if err != nil {
			t.Fatal(err)
		}
		if again != path || !os.SameFile(before, after) || !after.ModTime().Equal(before.ModTime()) {
			t.Errorf("expect %s kept, got %s rebuilt", path, again)
		}
	})

	t.Run("replaced", func(t *testing.T) {
		dir := t.TempDir()
		stale := filepath.Join(dir, "aws-lambda-rie")
		if err := os.WriteFile(stale, []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
		got, err := BuildRIE(context.Background(), "", dir)
		if err != nil {
			t.Fatal(err)
		}
		if !rieBuilt(got) {
			t.Errorf("expect %s replaced by the pinned emulator", got)
		}
		if left, _ := filepath.Glob(filepath.Join(dir, ".aws-lambda-rie-*")); len(left) > 0 {
			t.Errorf("expect no build directory left, got %v", left)
		}
	})
}

func TestInstallFlags(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"", ""},
		{"-buildvcs=false", "-buildvcs=false"},
		{"-mod=vendor", ""},
		{"-mod=mod -trimpath", "-trimpath"},
		{"--mod=readonly -modfile=alt.mod -buildvcs=false", "-buildvcs=false"},
		{"-modcacherw", "-modcacherw"},
	} {
		t.Run(tc.in, func(t *testing.T) {
			if got := installFlags(tc.in); got != tc.want {
				t.Errorf("installFlags(%q): expect %q, got %q", tc.in, tc.want, got)
			}
		})
	}
}

// A build says what it builds as it starts, and as it ends that it built
// or that nothing had changed; the start alone goes to ProgressLog.
func TestBuildFunctionSaysSo(t *testing.T) {
	o := Options{Template: "template.yaml", BuildDir: t.TempDir()}
	if err := o.setDefaults(); err != nil {
		t.Fatal(err)
	}
	props := map[string]any{"CodeUri": "testdata/echo"}
	wantProgress := "localstack: building echo (go build in " + filepath.Join(filepath.Dir(o.Template), "testdata", "echo") + ")…\n"
	for _, want := range []string{`^localstack: built echo in \S+\n$`, `^localstack: echo is up to date \(\S+\)\n$`} {
		var log, progress strings.Builder
		s := &Stack{Options: o}
		s.Options.Log, s.Options.ProgressLog = &log, &progress
		if _, err := s.buildFunction(context.Background(), "echo", props, nil); err != nil {
			t.Fatal(err)
		}
		if got := log.String(); !regexp.MustCompile(want).MatchString(got) {
			t.Errorf("log: expect %s, got %q", want, got)
		}
		if got := progress.String(); got != wantProgress {
			t.Errorf("progress: expect %q, got %q", wantProgress, got)
		}
	}
}
