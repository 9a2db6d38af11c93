package localdynamo

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"
)

// CheckedMotoVersion is the moto release the embedded patch was checked
// against; other releases run when the internals it adjusts are unchanged.
const CheckedMotoVersion = "5.2.1"

// Options configure Start and StartSQS.
type Options struct {
	// Python is the interpreter that has moto installed.
	// Defaults to $IDEM_PYTHON when set, else "python3".
	Python string

	// TTLSweepInterval is how often expired items of tables with TTL enabled
	// are deleted. Defaults to 0: never, unless Sweep is called.
	TTLSweepInterval time.Duration

	// ShardIteratorLifetime is how long a DynamoDB Streams shard iterator
	// lasts; GetRecords with an older one answers ExpiredIteratorException.
	// Defaults to 0: the server's own, 15 minutes, as on DynamoDB.
	ShardIteratorLifetime time.Duration

	// Log receives the server's own log lines (sweeps, warnings, errors).
	// Defaults to os.Stderr.
	Log io.Writer

	// StartTimeout bounds how long Start waits for the server to listen:
	// Python and moto's imports take seconds, and tens of them on a busy
	// machine starting several servers at once (make test's packages).
	// Defaults to 90 seconds.
	StartTimeout time.Duration

	// Verbose logs every request the server handles. Defaults to false.
	Verbose bool
}

// Server is a running local server. Stop it with Stop.
type Server struct {
	// Endpoint is the server's base URL, such as "http://127.0.0.1:40123".
	Endpoint string

	cmd   *exec.Cmd
	stdin io.Closer
	done  chan struct{}
	once  sync.Once
	err   error
}

// Start starts the patched DynamoDB server on 127.0.0.1 and an ephemeral port.
func Start(ctx context.Context, optFns ...func(*Options)) (*Server, error) {
	return start(ctx, "dynamodb", optFns)
}

// StartSQS starts moto's SQS, patched as the package doc says, in a
// process of its own on 127.0.0.1 and an ephemeral port.
func StartSQS(ctx context.Context, optFns ...func(*Options)) (*Server, error) {
	return start(ctx, "sqs", optFns)
}

func start(ctx context.Context, mode string, optFns []func(*Options)) (*Server, error) {
	o := Options{Python: os.Getenv("IDEM_PYTHON"), Log: os.Stderr, StartTimeout: 90 * time.Second}
	for _, fn := range optFns {
		fn(&o)
	}
	if o.Python == "" {
		o.Python = "python3"
	}
	if o.Log == nil {
		o.Log = io.Discard
	}
	python, err := exec.LookPath(o.Python)
	if err != nil {
		return nil, fmt.Errorf("localdynamo: %s not found (%w); install Python 3 and moto: pip install 'moto[server]'", o.Python, err)
	}
	path, err := writeScripts()
	if err != nil {
		return nil, err
	}
	args := []string{path, "--mode", mode, "--host", "127.0.0.1", "--port", "0", "--exit-on-stdin-eof"}
	if o.TTLSweepInterval > 0 {
		args = append(args, "--ttl-sweep-seconds", fmt.Sprint(o.TTLSweepInterval.Seconds()))
	}
	if o.ShardIteratorLifetime > 0 {
		args = append(args, "--shard-iterator-seconds", fmt.Sprint(o.ShardIteratorLifetime.Seconds()))
	}
	if o.Verbose {
		args = append(args, "--verbose")
	}
	cmd := exec.Command(python, args...)
	// Its own process group: a Ctrl-C in the terminal reaches the parent,
	// which stops the server itself, in order.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	startLog := &headBuffer{max: 4096}
	cmd.Stderr = io.MultiWriter(o.Log, startLog)
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("localdynamo: start %s: %w", python, err)
	}
	s := &Server{cmd: cmd, stdin: stdin, done: make(chan struct{})}

	ready := make(chan string, 1)
	go func() {
		r := bufio.NewReader(stdout)
		line, _ := r.ReadString('\n')
		ready <- line
		_, _ = io.Copy(o.Log, r)
	}()
	go func() {
		s.err = cmd.Wait()
		close(s.done)
	}()

	timer := time.NewTimer(o.StartTimeout)
	defer timer.Stop()
	select {
	case line := <-ready:
		if i := strings.Index(line, "http://"); i >= 0 {
			s.Endpoint = strings.Fields(line[i:])[0]
			return s, nil
		}
		<-s.done // it printed no address, so it is exiting
		return nil, fmt.Errorf("localdynamo: server did not start: %s", startFailure(startLog, s.err))
	case <-timer.C:
		_ = s.Stop()
		return nil, fmt.Errorf("localdynamo: server did not listen within %v: %s", o.StartTimeout, startFailure(startLog, s.err))
	case <-ctx.Done():
		_ = s.Stop()
		return nil, ctx.Err()
	}
}

func startFailure(log *headBuffer, err error) string {
	msg := strings.TrimSpace(log.String())
	if msg == "" && err != nil {
		msg = err.Error()
	}
	return msg
}

// PID is the server's process id.
func (s *Server) PID() int { return s.cmd.Process.Pid }

// Done is closed when the server process has exited.
func (s *Server) Done() <-chan struct{} { return s.done }

// Stop stops the server by process id (SIGTERM, then SIGKILL after five
// seconds) and waits for it to exit. It is safe to call more than once.
func (s *Server) Stop() error {
	s.once.Do(func() {
		_ = s.stdin.Close()
		_ = s.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-s.done:
		case <-time.After(5 * time.Second):
			_ = s.cmd.Process.Kill()
			<-s.done
		}
	})
	return nil
}

// Sweep deletes the expired items of every table with TTL enabled now and
// returns how many it deleted.
func (s *Server) Sweep(ctx context.Context) (int, error) {
	var out struct {
		Deleted int `json:"deleted"`
	}
	if err := s.post(ctx, "/_localdynamo/sweep", &out); err != nil {
		return 0, err
	}
	return out.Deleted, nil
}

// Reset deletes every table, queue and item the server holds.
func (s *Server) Reset(ctx context.Context) error {
	return s.post(ctx, "/moto-api/reset", nil)
}

func (s *Server) post(ctx context.Context, path string, out any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.Endpoint+path, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("localdynamo: %s: %w", path, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("localdynamo: %s: %s", path, resp.Status)
	}
	if out == nil {
		return nil
	}
	return json.NewDecoder(resp.Body).Decode(out)
}

// headBuffer keeps the first max bytes written to it: enough to explain a
// failed start without holding a long-running server's log.
type headBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
	max int
}

func (h *headBuffer) Write(p []byte) (int, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if room := h.max - h.buf.Len(); room > 0 {
		h.buf.Write(p[:min(room, len(p))])
	}
	return len(p), nil
}

func (h *headBuffer) String() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.buf.String()
}
