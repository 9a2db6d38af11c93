package receipts

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"
)

// ErrNotLoopback is Start's error for an address other than the loopback
// interface's: the service is a stand-in with no authentication.
var ErrNotLoopback = errors.New("receipts: not a loopback address")

// Server is a running receipts service. Its methods are safe for
// concurrent use.
type Server struct {
	opts    Options
	base    string // http://127.0.0.1:port
	srv     *http.Server
	closing chan struct{} // closed by Close: hung calls end

	closeOnce sync.Once
	closeErr  error

	// handlers are the calls being served; Close waits for them so that
	// Calls is complete once it returns.
	handlers sync.WaitGroup

	mu sync.Mutex
	st state // guarded by mu
}

// Start starts a receipts service listening on addr, a loopback address
// ("127.0.0.1:0" picks a free port). Stop it with Close.
func Start(addr string, optFns ...func(*Options)) (*Server, error) {
	var o Options
	for _, fn := range optFns {
		fn(&o)
	}
	o.setDefaults()
	if err := checkLoopback(addr); err != nil {
		return nil, err
	}
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("receipts: %w", err)
	}
	s := &Server{opts: o, base: "http://" + l.Addr().String(), closing: make(chan struct{}), st: newState()}
	mux := http.NewServeMux()
	mux.HandleFunc(receiptsPath, s.serveReceipt)
	s.adminRoutes(mux)
	s.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = s.srv.Serve(l) }()
	return s, nil
}

// receiptsPath is where the service takes its POSTs.
const receiptsPath = "/receipts"

// URL is the URL to POST to: http://127.0.0.1:<port>/receipts.
func (s *Server) URL() string { return s.base + receiptsPath }

// AdminURL is the base of the admin endpoints (see the package doc):
// http://127.0.0.1:<port>/_admin.
func (s *Server) AdminURL() string { return s.base + adminPrefix }

// Close stops the service: hung calls end without an answer, and Close
// returns once every call has been recorded. It is safe to call more than
// once.
func (s *Server) Close() error {
	s.closeOnce.Do(func() {
		s.mu.Lock()
		s.st.closed = true
		s.mu.Unlock()
		close(s.closing)
		s.closeErr = s.srv.Close()
		s.handlers.Wait()
	})
	return s.closeErr
}

// enter counts a call being served, unless the service is closing.
func (s *Server) enter() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.st.closed {
		return false
	}
	s.handlers.Add(1)
	return true
}

func checkLoopback(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("receipts: address %q: %w", addr, err)
	}
	if host == "localhost" {
		return nil
	}
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		return fmt.Errorf("%w: %q; give 127.0.0.1:<port> (port 0: a free one)", ErrNotLoopback, addr)
	}
	return nil
}
