package receipts

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

func startTest(t *testing.T, optFns ...func(*Options)) *Server {
	t.Helper()
	s, err := Start("127.0.0.1:0", optFns...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// answer is what a client got.
type answer struct {
	status   int
	receipt  string
	replayed bool
	errType  string
	errMsg   string
}

// noKey is a key the request is sent without.
const noKey = "\x00none"

func call(t *testing.T, client *http.Client, url, key, body string) (answer, error) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if key != noKey {
		req.Header.Set("Idempotency-Key", key)
	}
	resp, err := client.Do(req)
	if err != nil {
		return answer{}, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return answer{}, err
	}
	var v struct {
		Receipt string    `json:"receipt"`
		Error   errorBody `json:"error"`
	}
	if err := json.Unmarshal(b, &v); err != nil {
		t.Errorf("answer %d is not JSON: %q", resp.StatusCode, b)
	}
	return answer{status: resp.StatusCode, receipt: v.Receipt, replayed: resp.Header.Get("Idempotent-Replayed") == "true",
		errType: v.Error.Type, errMsg: v.Error.Message}, nil
}

// mustCall is call on a client of its own with no connection reuse: the
// transport retries a request with an Idempotency-Key on a reused
// connection that closed without an answer, which would hide a drop.
func mustCall(t *testing.T, url, key, body string) answer {
	t.Helper()
	a, err := call(t, freshClient(10*time.Second), url, key, body)
	if err != nil {
		t.Fatalf("POST key %q: %v", key, err)
	}
	return a
}

func freshClient(timeout time.Duration) *http.Client {
	return &http.Client{Timeout: timeout, Transport: &http.Transport{DisableKeepAlives: true}}
}

func credit1(id string) string { return `{"id":"` + id + `","account":"acc-1","cents":500}` }

// clockVar is a clock a test sets.
type clockVar struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clockVar) set(t time.Time) {
	c.mu.Lock()
	c.t = t
	c.mu.Unlock()
}

func (c *clockVar) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}
