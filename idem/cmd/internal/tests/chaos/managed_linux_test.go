package chaos_test

import (
	"context"
	"encoding/json"
	"fmt"
	"github.com/idemkit/kit/idem/cmd/internal/testphase"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/idemkit/kit/idem"
	"github.com/idemkit/kit/idem/idemtest"
)

// deliveries is how many copies of one message TestManagedInstancesOneKey
// sends at once to one environment that runs as many.
const deliveries = 8

// TestManagedInstancesOneKey runs the real functions/queue bootstrap as on
// Lambda Managed Instances (the emulator's managed-instances mode, 8
// invokes at once in one process) and sends it 8 invokes at once, each a
// batch of the same SQS message: one IdempotencyKey, one messageId, one
// credit. A gate in front of DynamoDB holds each TransactWriteItems until
// all 8 have come, or a second after the first, so every delivery's handler
// is in flight at once whether each sends its own transaction or they
// share one.
//
// It requires one credit and one Processed outcome, and reports the
// transactions that reached DynamoDB (today one per delivery: the Store
// does not coalesce concurrent deliveries of a key), the outcomes, the one
// bootstrap process, and each invoke's time window from the emulator's
// REPORT lines.
func TestManagedInstancesOneKey(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the functions and runs them under the emulator")
	}
	if os.Geteuid() != 0 {
		t.Skip("the emulator's managed-instances mode runs the bootstrap as user 993: run as root (localstack.FunctionConfig.MaxConcurrency)")
	}
	phase := testphase.Start(t, "managed instances", "%d deliveries of one key at once to one queue bootstrap in the emulator's managed-instances mode", deliveries)
	bin := buildFunctions(t, phase)
	tb := newTables(t)
	gate := newTxGate(t, idemtest.Endpoint(t), deliveries, time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	var lines timedLines
	fn := bin.concurrentFunction(t, "queue", deliveries, &lines, gate.url, tb)

	// The environment first: its process is up before the deliveries.
	if _, err := fn.Invoke(ctx, []byte(`{"Records":[]}`)); err != nil {
		t.Fatalf("warm-up invoke: %v", err)
	}
	before := bootstraps(t, fn)
	// The emulator may write an invoke's REPORT line after its answer:
	// the warm-up's must be in before the deliveries' windows are counted.
	lines.waitReports(t, 1)

	rec := events.SQSMessage{MessageId: "m-lmi", EventSource: "aws:sqs", EventSourceARN: "arn:aws:sqs:us-east-1:123456789012:credits",
		Body:              `{"id":"evt-lmi","account":"acc-lmi","cents":100}`,
		MessageAttributes: map[string]events.SQSMessageAttribute{"IdempotencyKey": {DataType: "String", StringValue: aws.String("evt-lmi")}}}
	event, _ := json.Marshal(events.SQSEvent{Records: []events.SQSMessage{rec}})
	release := make(chan struct{})
	outs, errs := make([][]byte, deliveries), make([]error, deliveries)
	var wg sync.WaitGroup
	for i := range deliveries {
		wg.Go(func() {
			<-release
			outs[i], errs[i] = fn.Invoke(ctx, event)
		})
	}
	close(release)
	wg.Wait()

	for i := range deliveries {
		if failed := batchFailures(t, outs[i], errs[i]); len(failed) != 0 {
			t.Errorf("delivery %d: want no record failed, got %q", i, failed)
		}
	}
	after := bootstraps(t, fn)
	got := tb.scan(t, tb.accounts, "account", "balance")
	// The emulator writes the function's log lines and its REPORT lines
	// as they come through their pipes, some after the invokes answered:
	// wait for every delivery's outcome and REPORT line.
	counted := countOutcomes(fn.waitLines(t, func(lines []map[string]any) bool { return total(countOutcomes(lines)) >= deliveries }))
	windows := reportWindows(lines.waitReports(t, 1+deliveries))
	windows = windows[min(1, len(windows)):] // the warm-up's
	txs, maxHeld, ops := gate.counts()

	// What the run shows.
	t.Logf("balance: %v (one credit: 100)", got)
	t.Logf("outcomes: %d Processed, %d Duplicate (all: %v)", counted[idem.Processed], counted[idem.Duplicate], counted)
	t.Logf("DynamoDB: %d TransactWriteItems reached it, at most %d held at the gate at once; every call: %v", txs, maxHeld, ops)
	t.Logf("process: emulator %v, bootstrap %v before the deliveries and %v after", fn.PIDs(), before, after)
	overlap := logWindows(t, windows)

	// What must hold.
	if fmt.Sprint(got) != fmt.Sprint(map[string]int{"acc-lmi": 100}) {
		t.Errorf("balance: want acc-lmi 100 (the credit once), got %v", got)
	}
	if counted[idem.Processed] != 1 {
		t.Errorf("outcomes: want one Processed (one effect), got %v", counted)
	}
	for _, oc := range []idem.Outcome{idem.Failed, idem.KeyReuse, idem.Refused, idem.Rejected} {
		if counted[oc] != 0 {
			t.Errorf("outcomes: want no %s, got %v", oc, counted)
		}
	}
	if len(before) != 1 || !slices.Equal(before, after) || len(fn.PIDs()) != 1 {
		t.Errorf("want the deliveries served by one bootstrap process in one emulator, got %v before, %v after, emulators %v", before, after, fn.PIDs())
	}
	if len(windows) != deliveries || !overlap {
		t.Errorf("want the %d invokes in flight at once, got windows %v", deliveries, windows)
	}
	// The Store coalesces deliveries of one key in flight in one process:
	// one handler run, one transaction, the others its Duplicates.
	if txs != 1 {
		t.Errorf("want the %d concurrent deliveries of one key coalesced into 1 TransactWriteItems, got %d", deliveries, txs)
	}
	phase.End("balance %v, outcomes %v, %d TransactWriteItems", got, counted, txs)
}

// bootstraps are the bootstrap processes the function's emulators run,
// each as pid/start time: the process, even should its pid be reused.
func bootstraps(t *testing.T, fn *function) []string {
	t.Helper()
	var out []string
	for _, emulator := range fn.PIDs() {
		dirs, _ := filepath.Glob("/proc/[0-9]*")
		for _, d := range dirs {
			pid, _ := strconv.Atoi(filepath.Base(d))
			if comm, ppid, start, err := stat(pid); err == nil && ppid == emulator && comm == "bootstrap" {
				out = append(out, fmt.Sprintf("%d/%s", pid, start))
			}
		}
	}
	return out
}

// window is one invoke's time in the emulator.
type window struct {
	requestID  string
	start, end time.Time
}

var reportLine = regexp.MustCompile(`REPORT RequestId: (\S+)\s+Duration: ([0-9.]+) ms`)

// reportWindows reads each invoke's window from the emulator's REPORT
// lines: it ended when its line came, its Duration before.
func reportWindows(lines []timedLine) []window {
	var ws []window
	for _, l := range lines {
		m := reportLine.FindStringSubmatch(l.text)
		if m == nil {
			continue
		}
		ms, _ := strconv.ParseFloat(m[2], 64)
		ws = append(ws, window{requestID: m[1], start: l.at.Add(-time.Duration(ms * float64(time.Millisecond))), end: l.at})
	}
	return ws
}

// logWindows logs the windows on one time line, and reports whether they
// all overlap: the last started before the first ended.
func logWindows(t *testing.T, ws []window) bool {
	t.Helper()
	if len(ws) == 0 {
		return false
	}
	origin := slices.MinFunc(ws, func(a, b window) int { return a.start.Compare(b.start) }).start
	for _, w := range ws {
		t.Logf("invoke %s: in the emulator from +%v to +%v", w.requestID, w.start.Sub(origin).Round(time.Millisecond), w.end.Sub(origin).Round(time.Millisecond))
	}
	lastStart := slices.MaxFunc(ws, func(a, b window) int { return a.start.Compare(b.start) }).start
	firstEnd := slices.MinFunc(ws, func(a, b window) int { return a.end.Compare(b.end) }).end
	t.Logf("all %d in flight at once from +%v to +%v", len(ws), lastStart.Sub(origin).Round(time.Millisecond), firstEnd.Sub(origin).Round(time.Millisecond))
	return lastStart.Before(firstEnd)
}

// timedLines keeps the function's output, a line per Write (the local
// stack writes whole lines), with when each came.
type timedLines struct {
	mu    sync.Mutex
	lines []timedLine
}

type timedLine struct {
	at   time.Time
	text string
}

func (w *timedLines) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.lines = append(w.lines, timedLine{time.Now(), string(p)})
	return len(p), nil
}

// waitReports waits up to 10 seconds for n REPORT lines and returns all
// the lines.
func (w *timedLines) waitReports(t *testing.T, n int) []timedLine {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		all := w.all()
		if len(reportWindows(all)) >= n || time.Now().After(deadline) {
			return all
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func (w *timedLines) all() []timedLine {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.lines)
}

// txGate stands between the function and DynamoDB. It counts every call
// by its operation, and holds each TransactWriteItems until hold after the
// first came, or until want have come: so the handlers that send one are
// all in flight at once, and one that sends none (its delivery coalesced
// into another's) waits for the held one.
type txGate struct {
	px   *proxy
	url  string
	want int
	hold time.Duration

	mu      sync.Mutex
	open    chan struct{}
	opened  bool
	txs     int
	held    int
	maxHeld int
	ops     map[string]int
}

func newTxGate(t *testing.T, target string, want int, hold time.Duration) *txGate {
	g := &txGate{px: &proxy{t: t, target: strings.TrimSuffix(target, "/")}, want: want, hold: hold,
		open: make(chan struct{}), ops: map[string]int{}}
	srv := httptest.NewServer(http.HandlerFunc(g.serve))
	g.url = srv.URL
	t.Cleanup(func() {
		srv.CloseClientConnections()
		srv.Close()
	})
	return g
}

func (g *txGate) serve(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		panic(http.ErrAbortHandler)
	}
	_, op, _ := strings.Cut(r.Header.Get("X-Amz-Target"), ".")
	g.mu.Lock()
	g.ops[op]++
	tx := op == "TransactWriteItems"
	if tx {
		g.txs++
		g.held++
		g.maxHeld = max(g.maxHeld, g.held)
		if g.txs == 1 {
			time.AfterFunc(g.hold, g.release)
		}
		if g.txs >= g.want {
			g.openLocked()
		}
	}
	g.mu.Unlock()
	if tx {
		<-g.open
		g.mu.Lock()
		g.held--
		g.mu.Unlock()
	}
	g.px.forward(w, r, body)
}

func (g *txGate) release() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.openLocked()
}

func (g *txGate) openLocked() {
	if !g.opened {
		g.opened = true
		close(g.open)
	}
}

// counts are the TransactWriteItems that reached DynamoDB, the most held
// at once, and every call by operation.
func (g *txGate) counts() (txs, maxHeld int, ops map[string]int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.txs, g.maxHeld, maps.Clone(g.ops)
}
