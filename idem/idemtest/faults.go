package idemtest

import (
	"bytes"
	"encoding/json"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"syscall"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
)

// FaultKind is a failure Faults can inject.
type FaultKind string

// The faults a DynamoDB client meets in production.
const (
	// FaultThrottle answers 400 ThrottlingException; the request is not sent.
	FaultThrottle FaultKind = "throttle"
	// FaultServerError answers 500 InternalServerError; the request is not sent.
	FaultServerError FaultKind = "5xx"
	// FaultReset fails with a connection reset before the request is sent.
	FaultReset FaultKind = "reset"
	// FaultLostResponse sends the request, lets the server commit it, and
	// fails with a connection reset instead of its answer.
	FaultLostResponse FaultKind = "lost-response"
	// FaultTruncatedResponse sends the request, lets the server commit it,
	// and cuts its answer short: status 200, half the body, then an
	// unexpected EOF, as a connection that drops mid-body does.
	FaultTruncatedResponse FaultKind = "truncated-response"
	// FaultTransactionConflict answers as DynamoDB does while another
	// transaction writes an item the request touches; the request is not
	// sent. A TransactWriteItems is cancelled (400
	// TransactionCanceledException) with TransactionConflict as the
	// reason of one of its items, drawn at random, and None for the
	// others; any other operation (GetItem, UpdateItem, PutItem,
	// DeleteItem) gets 400 TransactionConflictException.
	FaultTransactionConflict FaultKind = "transaction-conflict"
	// FaultReplicatedConflict answers 400 ReplicatedWriteConflictException,
	// as a global table does while another Region writes the item; the
	// request is not sent.
	FaultReplicatedConflict FaultKind = "replicated-conflict"
)

// FaultKinds lists every kind, in a stable order: kinds added later go
// last, so that a Seed draws the same faults of the earlier kinds.
var FaultKinds = []FaultKind{FaultThrottle, FaultServerError, FaultReset, FaultLostResponse, FaultTruncatedResponse,
	FaultTransactionConflict, FaultReplicatedConflict}

// Faults is an http.RoundTripper that injects failures into a DynamoDB
// client's requests, beneath the SDK's own retries and without any change
// to the code under test. Install it with Option.
type Faults struct {
	// Rates is each kind's probability per request, drawn independently in
	// FaultKinds order; their sum should stay below 1.
	Rates map[FaultKind]float64
	// Operations limits injection to these operations, such as
	// "TransactWriteItems". Defaults to every operation.
	Operations []string
	// Max bounds the faults injected in all, so that a test can fail the
	// first requests and let the later ones through (Rates 1, Max 2: the
	// first two requests fail). Zero or negative: no bound.
	Max int
	// Seed makes the draws repeatable.
	Seed uint64
	// Next carries the requests that are sent. Defaults to a new
	// http.Transport.
	Next http.RoundTripper

	once     sync.Once
	mu       sync.Mutex
	rng      *rand.Rand
	counts   map[FaultKind]int
	injected int
	requests int
}

// Option installs the injector as the client's HTTP client.
func (f *Faults) Option(o *dynamodb.Options) {
	o.HTTPClient = &http.Client{Transport: f}
}

// Counts returns how many faults of each kind were injected.
func (f *Faults) Counts() map[FaultKind]int {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make(map[FaultKind]int, len(f.counts))
	for k, v := range f.counts {
		out[k] = v
	}
	return out
}

// Requests returns how many requests passed through, faulted or not.
func (f *Faults) Requests() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.requests
}

func (f *Faults) init() {
	f.once.Do(func() {
		f.rng = rand.New(rand.NewPCG(f.Seed, f.Seed^0x9e3779b97f4a7c15))
		f.counts = map[FaultKind]int{}
		if f.Next == nil {
			f.Next = &http.Transport{Proxy: nil, MaxIdleConnsPerHost: 64}
		}
	})
}

func (f *Faults) draw(op string) FaultKind {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.requests++
	if len(f.Operations) > 0 && !slices.Contains(f.Operations, op) || f.Max > 0 && f.injected >= f.Max {
		return ""
	}
	x := f.rng.Float64()
	for _, k := range FaultKinds {
		if x < f.Rates[k] {
			f.counts[k]++
			f.injected++
			return k
		}
		x -= f.Rates[k]
	}
	return ""
}

// RoundTrip implements http.RoundTripper.
func (f *Faults) RoundTrip(req *http.Request) (*http.Response, error) {
	f.init()
	op := req.Header.Get("X-Amz-Target")
	op = op[strings.LastIndexByte(op, '.')+1:]
	reset := &net.OpError{Op: "read", Net: "tcp", Err: syscall.ECONNRESET}
	switch f.draw(op) {
	case FaultThrottle:
		closeBody(req)
		return jsonError(req, http.StatusBadRequest, "ThrottlingException", "injected throttling"), nil
	case FaultServerError:
		closeBody(req)
		return jsonError(req, http.StatusInternalServerError, "InternalServerError", "injected server error"), nil
	case FaultReset:
		closeBody(req)
		return nil, reset
	case FaultTransactionConflict:
		if op == "TransactWriteItems" {
			return f.cancelled(req)
		}
		closeBody(req)
		return jsonError(req, http.StatusBadRequest, "TransactionConflictException", "injected: transaction is ongoing for the item"), nil
	case FaultReplicatedConflict:
		closeBody(req)
		return jsonError(req, http.StatusBadRequest, "ReplicatedWriteConflictException", "injected: the item is being modified by a request in another Region"), nil
	case FaultLostResponse:
		resp, err := f.Next.RoundTrip(req)
		if err != nil {
			return nil, err
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
		return nil, reset
	case FaultTruncatedResponse:
		resp, err := f.Next.RoundTrip(req)
		if err != nil {
			return nil, err
		}
		body, _ := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		resp.Body = io.NopCloser(io.MultiReader(bytes.NewReader(body[:len(body)/2]), errReader{io.ErrUnexpectedEOF}))
		return resp, nil
	}
	return f.Next.RoundTrip(req)
}

// cancelled answers a TransactWriteItems as cancelled by a conflict on
// one of its items, drawn at random: the reasons in the items' order, as
// DynamoDB gives them.
func (f *Faults) cancelled(req *http.Request) (*http.Response, error) {
	var in struct{ TransactItems []json.RawMessage }
	if req.Body != nil {
		b, err := io.ReadAll(req.Body)
		closeBody(req)
		if err != nil {
			return nil, err
		}
		_ = json.Unmarshal(b, &in) // unreadable: one item, as the least DynamoDB takes
	}
	n := max(len(in.TransactItems), 1)
	f.mu.Lock()
	hit := f.rng.IntN(n)
	f.mu.Unlock()
	type reason struct{ Code, Message string }
	reasons := make([]reason, n)
	codes := make([]string, n)
	for i := range reasons {
		reasons[i], codes[i] = reason{Code: "None"}, "None"
	}
	reasons[hit], codes[hit] = reason{Code: "TransactionConflict", Message: "Transaction is ongoing for the item"}, "TransactionConflict"
	body, _ := json.Marshal(struct {
		Type                string `json:"__type"`
		Message             string
		CancellationReasons []reason
	}{"com.amazonaws.dynamodb.v20120810#TransactionCanceledException",
		"Transaction cancelled, please refer cancellation reasons for specific reasons [" + strings.Join(codes, ", ") + "]", reasons})
	return response(req, http.StatusBadRequest, body), nil
}

type errReader struct{ err error }

func (r errReader) Read([]byte) (int, error) { return 0, r.err }

func closeBody(req *http.Request) {
	if req.Body != nil {
		_ = req.Body.Close()
	}
}

func jsonError(req *http.Request, status int, code, msg string) *http.Response {
	body := `{"__type":"com.amazonaws.dynamodb.v20120810#` + code + `","message":"` + msg + `"}`
	return response(req, status, []byte(body))
}

func response(req *http.Request, status int, body []byte) *http.Response {
	return &http.Response{
		Status:        http.StatusText(status),
		StatusCode:    status,
		Proto:         "HTTP/1.1",
		ProtoMajor:    1,
		ProtoMinor:    1,
		Header:        http.Header{"Content-Type": []string{"application/x-amz-json-1.0"}},
		Body:          io.NopCloser(bytes.NewReader(body)),
		ContentLength: int64(len(body)),
		Request:       req,
	}
}
