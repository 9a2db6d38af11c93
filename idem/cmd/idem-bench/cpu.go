package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// goBenchmarks are the Go benchmarks the run includes: the kit's CPU cost
// with DynamoDB answered in-process, and the local server's transaction
// latency by table size.
var goBenchmarks = []struct {
	pkg, run string
	kit      bool // a CPU cost of the kit's own, on one core
}{
	{"./idem", "^BenchmarkProcess$", true},
	{"./idem/sqsconsumer", "^BenchmarkSQSAdapter", true},
	{"./idem/webhook", "^BenchmarkWebhook$", true},
	{"./idem/localdynamo", "^BenchmarkTransactWriteItems$", false},
}

// benchResult is one benchmark's medians over its -count runs.
type benchResult struct {
	name    string
	kit     bool
	msgs    int // messages per op: a batch's records, else 1
	nsPerOp float64
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
	var out []benchResult
	for _, gb := range goBenchmarks {
		bt := benchtime
		if !gb.kit {
			bt = "200x" // transactions; filling 10,000 items takes longer than these
		}
		args := []string{"test", "-run", "^$", "-bench", gb.run, "-benchmem", "-benchtime", bt, "-count", strconv.Itoa(count)}
		if gb.kit {
			args = append(args, "-cpu", "1")
		}
		cmd := exec.CommandContext(ctx, goCmd, append(args, gb.pkg)...)
		cmd.Env = append(os.Environ(), "AWS_ENDPOINT_URL_DYNAMODB="+endpoint)
		var buf bytes.Buffer
		cmd.Stdout, cmd.Stderr = io.MultiWriter(&buf, raw), os.Stderr
		if err := cmd.Run(); err != nil {
			return nil, fmt.Errorf("go %s: %w", strings.Join(args, " "), err)
		}
		out = append(out, parseBench(buf.Bytes(), gb.kit)...)
	}
	return out, nil
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
