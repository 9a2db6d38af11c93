package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// goBenchmarks are the Go benchmarks the run includes: the kit's CPU cost
// with DynamoDB answered in-process, and the local server's transaction
// latency by table size.
// Each package is in the module at dir (relative to the repository's
// root, where idem-bench runs): the library's, or the tooling's for the
// tracing benchmark, which records with OpenTelemetry's SDK.
var goBenchmarks = []struct {
	dir, pkg, run string
	kit           bool // a CPU cost of the kit's own, on one core
}{
	{".", "./idem", "^BenchmarkProcess$", true},
	{"idem/cmd", "./internal/tests/traces", "^BenchmarkTracing$", true},
	{".", "./idem/sqsconsumer", "^BenchmarkSQSAdapter", true},
	{".", "./idem/webhook", "^BenchmarkWebhook$", true},
	{".", "./idem/idemtest/internal/localdynamo", "^BenchmarkTransactWriteItems$", false},
}

// benchResult is one benchmark's medians over its -count runs.
type benchResult struct {
	name    string
	kit     bool
	msgs    int     // messages per op: a batch's records, else 1
	nsPerOp float64 // wall time, as go test reports it
	cpu     float64 // CPU nanoseconds per op, from the process's rusage
	bPerOp  float64
	allocs  float64
}

// goCmd and makeCmd are the tools the run calls (flags -go and -make).
var goCmd, makeCmd = "go", "make"

var benchLine = regexp.MustCompile(`^(Benchmark\S+?)(?:-\d+)?\s+\d+\s+(.*)$`)

// runGoBenchmarks runs each package's benchmarks with go test, writes
// their output (benchstat's input format) to raw, and returns the medians.
// The kit's run on one core (-cpu 1), so ns/op is CPU time, not a
// parallel batch's wall time; the local server's get the shared endpoint.
func runGoBenchmarks(ctx context.Context, endpoint, benchtime string, count int, raw io.Writer) ([]benchResult, error) {
	dir, err := os.MkdirTemp("", "idem-bench-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	var out []benchResult
	for n, gb := range goBenchmarks {
		bt := benchtime
		if !gb.kit {
			bt = "200x" // transactions; filling 10,000 items takes longer than these
		}
		args := []string{"test", "-run", "^$", "-bench", gb.run, "-benchmem", "-benchtime", bt, "-count", strconv.Itoa(count)}
		if gb.kit {
			args = append(args, "-cpu", "1")
		}
		cmd := exec.CommandContext(ctx, goCmd, append(args, gb.pkg)...)
		cmd.Dir = gb.dir
		cmd.Env = append(os.Environ(), "AWS_ENDPOINT_URL_DYNAMODB="+endpoint)
		var buf bytes.Buffer
		cmd.Stdout, cmd.Stderr = io.MultiWriter(&buf, raw), os.Stderr
		if err := cmd.Run(); err != nil {
			return nil, fmt.Errorf("go %s: %w", strings.Join(args, " "), err)
		}
		results := parseBench(buf.Bytes(), gb.kit)
		if gb.kit {
			bin := filepath.Join(dir, fmt.Sprint(n, ".test"))
			build := exec.CommandContext(ctx, goCmd, "test", "-c", "-o", bin, gb.pkg)
			build.Dir = gb.dir
			if err := build.Run(); err != nil {
				return nil, fmt.Errorf("go test -c %s: %w", gb.pkg, err)
			}
			for i := range results {
				var cpus []float64
				for range count {
					c, err := cpuPerOp(ctx, bin, results[i].name)
					if err != nil {
						return nil, err
					}
					cpus = append(cpus, c)
				}
				results[i].cpu = median(cpus)
			}
		}
		out = append(out, results...)
	}
	return out, nil
}

// cpuPerOp is the CPU time, in nanoseconds, one op of a benchmark costs,
// from the process's rusage: two runs of fixed op counts, one process
// each, and their difference, so start-up and setup cancel out. Unlike
// ns/op it does not grow while other processes hold the cores.
func cpuPerOp(ctx context.Context, bin, name string) (float64, error) {
	top, sub, _ := strings.Cut(name, "/")
	pattern := "^" + regexp.QuoteMeta(top) + "$"
	if sub != "" {
		pattern += "/^" + regexp.QuoteMeta(sub) + "$"
	}
	ops := [2]int{2_000, 22_000}
	var cpu [2]time.Duration
	for i, n := range ops {
		cmd := exec.CommandContext(ctx, bin, "-test.run", "^$", "-test.bench", pattern, "-test.benchtime", fmt.Sprint(n, "x"), "-test.cpu", "1")
		if b, err := cmd.CombinedOutput(); err != nil {
			return 0, fmt.Errorf("%s -test.bench %s: %w\n%s", bin, pattern, err, b)
		}
		cpu[i] = cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
	}
	return float64(cpu[1]-cpu[0]) / float64(ops[1]-ops[0]), nil
}

func parseBench(b []byte, kit bool) []benchResult {
	runs := map[string]map[string][]float64{}
	var order []string
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		m := benchLine.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		if runs[m[1]] == nil {
			runs[m[1]] = map[string][]float64{}
			order = append(order, m[1])
		}
		f := strings.Fields(m[2])
		for i := 0; i+1 < len(f); i += 2 {
			if v, err := strconv.ParseFloat(f[i], 64); err == nil {
				runs[m[1]][f[i+1]] = append(runs[m[1]][f[i+1]], v)
			}
		}
	}
	var out []benchResult
	for _, name := range order {
		r := benchResult{name: name, kit: kit, msgs: 1,
			nsPerOp: median(runs[name]["ns/op"]), bPerOp: median(runs[name]["B/op"]), allocs: median(runs[name]["allocs/op"])}
		if _, n, ok := strings.Cut(name, "batch="); ok {
			r.msgs, _ = strconv.Atoi(n)
		}
		out = append(out, r)
	}
	return out
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	return s[len(s)/2]
}
