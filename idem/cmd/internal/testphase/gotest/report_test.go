package main

import (
	"bytes"
	"os/exec"
	"regexp"
	"strings"
	"testing"
)

func TestReport(t *testing.T) {
	for _, tc := range []struct {
		name   string
		events string // go test -json's lines
		want   string
		failed bool
	}{
		{
			name: "a passing package: its summary line only",
			events: `{"Action":"start","Package":"m/a"}
{"Action":"run","Package":"m/a","Test":"TestA"}
{"Action":"output","Package":"m/a","Test":"TestA","Output":"=== RUN   TestA\n"}
{"Action":"output","Package":"m/a","Test":"TestA","Output":"    a_test.go:9: a log line\n"}
{"Action":"output","Package":"m/a","Test":"TestA","Output":"--- PASS: TestA (0.00s)\n"}
{"Action":"pass","Package":"m/a","Test":"TestA"}
{"Action":"output","Package":"m/a","Output":"PASS\n"}
{"Action":"output","Package":"m/a","Output":"ok  \tm/a\t0.01s\n"}
{"Action":"pass","Package":"m/a"}
{"Action":"start","Package":"m/e"}
{"Action":"output","Package":"m/e","Output":"?   \tm/e\t[no test files]\n"}
{"Action":"skip","Package":"m/e"}
`,
			want: "ok  \tm/a\t0.01s\n?   \tm/e\t[no test files]\n",
		},
		{
			name: "phase lines as they come, the log around them not",
			events: `{"Action":"output","Package":"m/chaos","Test":"TestLong","Output":"=== RUN   TestLong\n"}
{"Action":"output","Package":"m/chaos","Test":"TestLong","Output":"    long_test.go:12: phase: replay: 20 messages…\n"}
{"Action":"output","Package":"m/chaos","Test":"TestLong","Output":"    long_test.go:13: not a phase: phase: x\n"}
{"Action":"output","Package":"m/chaos","Test":"TestLong","Output":"phase: printed, not logged\n"}
{"Action":"output","Package":"m/chaos","Test":"TestLong/sub","Output":"        long_test.go:20: phase: replay: 20 messages, 1.2s\n"}
{"Action":"pass","Package":"m/chaos","Test":"TestLong/sub"}
{"Action":"pass","Package":"m/chaos","Test":"TestLong"}
{"Action":"output","Package":"m/chaos","Output":"ok  \tm/chaos\t1.3s\n"}
{"Action":"pass","Package":"m/chaos"}
`,
			want: "…   \tm/chaos\treplay: 20 messages…\n…   \tm/chaos\treplay: 20 messages, 1.2s\nok  \tm/chaos\t1.3s\n",
		},
		{
			name: "a failing package: its failed tests in full, then FAIL",
			events: `{"Action":"output","Package":"m/c","Test":"TestFail","Output":"=== RUN   TestFail\n"}
{"Action":"output","Package":"m/c","Test":"TestFail","Output":"    c_test.go:3: note\n"}
{"Action":"output","Package":"m/c","Test":"TestFail/sub","Output":"=== RUN   TestFail/sub\n"}
{"Action":"output","Package":"m/c","Test":"TestFail/sub","Output":"    c_test.go:3: boom\n"}
{"Action":"output","Package":"m/c","Test":"TestFail/sub","Output":"--- FAIL: TestFail/sub (0.00s)\n"}
{"Action":"fail","Package":"m/c","Test":"TestFail/sub"}
{"Action":"output","Package":"m/c","Test":"TestFail","Output":"--- FAIL: TestFail (0.00s)\n"}
{"Action":"fail","Package":"m/c","Test":"TestFail"}
{"Action":"output","Package":"m/c","Test":"TestOK","Output":"=== RUN   TestOK\n"}
{"Action":"output","Package":"m/c","Test":"TestOK","Output":"--- PASS: TestOK (0.00s)\n"}
{"Action":"pass","Package":"m/c","Test":"TestOK"}
{"Action":"output","Package":"m/c","Output":"FAIL\n"}
{"Action":"output","Package":"m/c","Output":"FAIL\tm/c\t0.005s\n"}
{"Action":"fail","Package":"m/c"}
`,
			want: "=== RUN   TestFail\n    c_test.go:3: note\n=== RUN   TestFail/sub\n    c_test.go:3: boom\n--- FAIL: TestFail/sub (0.00s)\n" +
				"--- FAIL: TestFail (0.00s)\nFAIL\nFAIL\tm/c\t0.005s\nFAIL\n",
			failed: true,
		},
		{
			name: "a test cut short by a panic is printed",
			events: `{"Action":"output","Package":"m/p","Test":"TestPanic","Output":"=== RUN   TestPanic\n"}
{"Action":"output","Package":"m/p","Test":"TestPanic","Output":"panic: boom\n"}
{"Action":"output","Package":"m/p","Output":"FAIL\tm/p\t0.01s\n"}
{"Action":"fail","Package":"m/p"}
`,
			want:   "=== RUN   TestPanic\npanic: boom\nFAIL\tm/p\t0.01s\nFAIL\n",
			failed: true,
		},
		{
			name: "a build failure as go test prints it",
			events: `{"ImportPath":"m/d [m/d.test]","Action":"build-output","Output":"# m/d [m/d.test]\n"}
{"ImportPath":"m/d [m/d.test]","Action":"build-output","Output":"d/d_test.go:2:12: undefined: undefined\n"}
{"ImportPath":"m/d [m/d.test]","Action":"build-fail"}
{"Action":"start","Package":"m/d"}
{"Action":"output","Package":"m/d","Output":"FAIL\tm/d [build failed]\n"}
{"Action":"fail","Package":"m/d","FailedBuild":"m/d [m/d.test]"}
`,
			want:   "# m/d [m/d.test]\nd/d_test.go:2:12: undefined: undefined\nFAIL\tm/d [build failed]\nFAIL\n",
			failed: true,
		},
		{
			name:   "a line that is no event, as it is",
			events: "go: warning: something\n",
			want:   "go: warning: something\n",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out strings.Builder
			r := newReport(&out)
			if err := r.read(strings.NewReader(tc.events)); err != nil {
				t.Fatal(err)
			}
			r.finish()
			if got := out.String(); got != tc.want {
				t.Errorf("expect\n%q\ngot\n%q", tc.want, got)
			}
			if r.failed != tc.failed {
				t.Errorf("failed: expect %v, got %v", tc.failed, r.failed)
			}
		})
	}
}

// The phase lines testphase logs, as go test -json hands them over, are
// the lines the report shows as they come.
func TestPhasesThroughGoTest(t *testing.T) {
	goCmd, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go is not on PATH")
	}
	out, err := exec.Command(goCmd, "test", "-json", "-count=1", "./testdata/phases").Output()
	if err != nil {
		t.Fatalf("go test: %v\n%s", err, out)
	}
	var got strings.Builder
	r := newReport(&got)
	if err := r.read(bytes.NewReader(out)); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(got.String()), "\n")
	want := []string{`^…   \t\S+/phases\treplay: 20 messages…$`, `^…   \t\S+/phases\treplay: 10 of 20, \d.*s$`,
		`^…   \t\S+/phases\treplay: 20 messages, 0 lost, \d.*s$`,
		`^…   \t\S+/phases\tcut short: 5 messages…$`, `^…   \t\S+/phases\tcut short: stopped, \d.*s: skipped$`,
		`^ok  \t\S+/phases\t`}
	if len(lines) != len(want) {
		t.Fatalf("expect %d lines, got %q", len(want), lines)
	}
	for i, re := range want {
		if !regexp.MustCompile(re).MatchString(lines[i]) {
			t.Errorf("line %d: expect %s, got %q", i, re, lines[i])
		}
	}
}

// The slowest packages and top-level tests come last, slowest first;
// subtests are their test's time, not lines of their own.
func TestSlowest(t *testing.T) {
	events := `{"Action":"pass","Package":"m/a","Test":"TestA","Elapsed":1.5}
{"Action":"pass","Package":"m/a","Test":"TestA/sub","Elapsed":1.4}
{"Action":"fail","Package":"m/a","Test":"TestB","Elapsed":3}
{"Action":"skip","Package":"m/a","Test":"TestC","Elapsed":0}
{"Action":"fail","Package":"m/a","Elapsed":4.6}
{"Action":"pass","Package":"m/b","Test":"TestD","Elapsed":0.2}
{"Action":"pass","Package":"m/b","Elapsed":9.25}
`
	var out strings.Builder
	r := newReport(&out)
	if err := r.read(strings.NewReader(events)); err != nil {
		t.Fatal(err)
	}
	out.Reset() // the report's own lines, tested above
	r.slowest(2)
	want := "the 2 slowest packages:\n     9.2s  m/b\n     4.6s  m/a\n" +
		"the 2 slowest tests:\n     3.0s  m/a TestB\n     1.5s  m/a TestA\n"
	if got := out.String(); got != want {
		t.Errorf("expect\n%q\ngot\n%q", want, got)
	}
}
