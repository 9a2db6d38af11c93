package localstack

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Traces receives the functions' spans as an OTLP collector does (the
// ADOT Lambda layer's, on AWS), over HTTP with OTLP's JSON encoding, which
// the reference functions send (functions/internal/telemetry), and keeps
// them by trace, for a person to read (idem-local -traces) and for tests.
type Traces struct {
	URL string // the OTLP endpoint: OTEL_EXPORTER_OTLP_ENDPOINT

	srv   *http.Server
	mu    sync.Mutex
	spans []Span
	added chan struct{} // closed, and replaced, as spans arrive
}

// Span is a received span.
type Span struct {
	TraceID, SpanID, ParentID string
	Name, Service             string
	Kind                      int
	Start, End                time.Time
	Attrs                     map[string]string
	Error                     string // the status message of a span that failed
}

// StartTraces serves an OTLP/HTTP endpoint on addr (a loopback address;
// port 0 picks one).
func StartTraces(addr string) (*Traces, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("traces: %w", err)
	}
	t := &Traces{URL: "http://" + ln.Addr().String(), added: make(chan struct{})}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/traces", t.receive)
	mux.HandleFunc("GET /traces", t.list)
	mux.HandleFunc("GET /traces/{id}", t.show)
	t.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = t.srv.Serve(ln) }()
	return t, nil
}

// Stop stops receiving.
func (t *Traces) Stop() { _ = t.srv.Close() }

// receive takes one OTLP export request.
func (t *Traces) receive(w http.ResponseWriter, r *http.Request) {
	if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		http.Error(w, "this collector takes OTLP's JSON encoding only (Content-Type application/json), not "+ct, http.StatusUnsupportedMediaType)
		return
	}
	var req struct {
		ResourceSpans []struct {
			Resource struct {
				Attributes []kv `json:"attributes"`
			} `json:"resource"`
			ScopeSpans []struct {
				Spans []struct {
					TraceID      string `json:"traceId"`
					SpanID       string `json:"spanId"`
					ParentSpanID string `json:"parentSpanId"`
					Name         string `json:"name"`
					Kind         int    `json:"kind"`
					Start        string `json:"startTimeUnixNano"`
					End          string `json:"endTimeUnixNano"`
					Attributes   []kv   `json:"attributes"`
					Status       struct {
						Code    int    `json:"code"`
						Message string `json:"message"`
					} `json:"status"`
				} `json:"spans"`
			} `json:"scopeSpans"`
		} `json:"resourceSpans"`
	}
	if err := json.NewDecoder(io.LimitReader(r.Body, 16<<20)).Decode(&req); err != nil {
		http.Error(w, "not an OTLP JSON export request: "+err.Error(), http.StatusBadRequest)
		return
	}
	var got []Span
	for _, rs := range req.ResourceSpans {
		service := attrMap(rs.Resource.Attributes)["service.name"]
		for _, ss := range rs.ScopeSpans {
			for _, s := range ss.Spans {
				sp := Span{TraceID: s.TraceID, SpanID: s.SpanID, ParentID: s.ParentSpanID, Name: s.Name, Service: service,
					Kind: s.Kind, Start: unixNano(s.Start), End: unixNano(s.End), Attrs: attrMap(s.Attributes)}
				if s.Status.Code == 2 {
					sp.Error = "error: " + s.Status.Message
				}
				got = append(got, sp)
			}
		}
	}
	t.mu.Lock()
	t.spans = append(t.spans, got...)
	if n := len(t.spans) - maxSpans; n > 0 { // a stack left running keeps the latest
		t.spans = slices.Delete(t.spans, 0, n)
	}
	close(t.added)
	t.added = make(chan struct{})
	t.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write([]byte("{}"))
}

// maxSpans bounds what a long-running stack keeps.
const maxSpans = 100_000

// list answers GET /traces: a line per trace, the latest last, each with
// its first span, its functions and its outcomes.
func (t *Traces) list(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	for _, tr := range t.Traces() {
		outcomes := map[string]int{}
		for _, s := range tr {
			if o := s.Attrs["idem.outcome"]; o != "" {
				outcomes[o]++
			}
		}
		var outs []string
		for _, o := range slices.Sorted(maps.Keys(outcomes)) {
			outs = append(outs, fmt.Sprintf("%s×%d", o, outcomes[o]))
		}
		fmt.Fprintf(w, "%s  %s  %-28s %2d spans  %s  %s\n", tr[0].TraceID, tr[0].Start.Format("15:04:05.000"), tr[0].Name,
			len(tr), strings.Join(Services(tr), " → "), strings.Join(outs, " "))
	}
}

// show answers GET /traces/{id}: the trace as a tree.
func (t *Traces) show(w http.ResponseWriter, r *http.Request) {
	tr := t.Trace(r.PathValue("id"))
	if len(tr) == 0 {
		http.Error(w, "no trace "+r.PathValue("id")+" received (GET /traces lists them)", http.StatusNotFound)
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	_, _ = io.WriteString(w, Tree(tr))
}

// Traces are the spans received so far by trace, each by start time, the
// traces by their first span's.
func (t *Traces) Traces() [][]Span {
	by := map[string][]Span{}
	for _, s := range t.Spans() {
		by[s.TraceID] = append(by[s.TraceID], s)
	}
	out := make([][]Span, 0, len(by))
	for _, tr := range by {
		slices.SortFunc(tr, func(a, b Span) int { return a.Start.Compare(b.Start) })
		out = append(out, tr)
	}
	slices.SortFunc(out, func(a, b []Span) int { return a[0].Start.Compare(b[0].Start) })
	return out
}

// Widest is the first trace that crosses the most functions: a credit's,
// from its delivery through the relay to the ledger, once one has been
// received whole.
func (t *Traces) Widest() []Span {
	var best []Span
	for _, tr := range t.Traces() {
		if len(Services(tr)) > len(Services(best)) {
			best = tr
		}
	}
	return best
}

// Services are the functions a trace's spans came from, in order of
// first appearance.
func Services(tr []Span) []string {
	var out []string
	for _, s := range tr {
		if !slices.Contains(out, s.Service) {
			out = append(out, s.Service)
		}
	}
	return out
}

type kv struct {
	Key   string `json:"key"`
	Value struct {
		String *string  `json:"stringValue"`
		Int    *string  `json:"intValue"`
		Bool   *bool    `json:"boolValue"`
		Double *float64 `json:"doubleValue"`
	} `json:"value"`
}

func attrMap(kvs []kv) map[string]string {
	m := make(map[string]string, len(kvs))
	for _, a := range kvs {
		switch v := a.Value; {
		case v.String != nil:
			m[a.Key] = *v.String
		case v.Int != nil:
			m[a.Key] = *v.Int
		case v.Bool != nil:
			m[a.Key] = strconv.FormatBool(*v.Bool)
		case v.Double != nil:
			m[a.Key] = strconv.FormatFloat(*v.Double, 'g', -1, 64)
		}
	}
	return m
}

func unixNano(s string) time.Time {
	n, _ := strconv.ParseInt(s, 10, 64)
	return time.Unix(0, n)
}

// Spans are the spans received so far.
func (t *Traces) Spans() []Span {
	t.mu.Lock()
	defer t.mu.Unlock()
	return slices.Clone(t.spans)
}

// Trace is trace id's spans received so far, by start time.
func (t *Traces) Trace(id string) []Span {
	var out []Span
	for _, s := range t.Spans() {
		if s.TraceID == id {
			out = append(out, s)
		}
	}
	slices.SortFunc(out, func(a, b Span) int { return a.Start.Compare(b.Start) })
	return out
}

// Wait waits until done says the spans received make what it waits for,
// or ctx ends.
func (t *Traces) Wait(ctx context.Context, done func([]Span) bool) bool {
	for {
		t.mu.Lock()
		spans, added := slices.Clone(t.spans), t.added
		t.mu.Unlock()
		if done(spans) {
			return true
		}
		select {
		case <-added:
		case <-ctx.Done():
			return false
		}
	}
}

// Tree renders a trace's spans as an indented tree, each with its
// function, its time from the trace's start and its length, and the
// kit's attributes.
func Tree(spans []Span) string {
	if len(spans) == 0 {
		return ""
	}
	children := map[string][]Span{}
	ids := map[string]bool{}
	for _, s := range spans {
		ids[s.SpanID] = true
	}
	var roots []Span
	for _, s := range spans {
		if s.ParentID == "" || !ids[s.ParentID] {
			roots = append(roots, s)
		} else {
			children[s.ParentID] = append(children[s.ParentID], s)
		}
	}
	start := spans[0].Start
	for _, s := range spans {
		if s.Start.Before(start) {
			start = s.Start
		}
	}
	// Columns as wide as the widest indented name and function.
	byID := map[string]Span{}
	for _, s := range spans {
		byID[s.SpanID] = s
	}
	depthOf := func(s Span) (d int) {
		for p, ok := byID[s.ParentID]; ok; p, ok = byID[p.ParentID] {
			d++
		}
		return d + 1
	}
	nameW, svcW := 0, 0
	for _, s := range spans {
		nameW = max(nameW, 2*depthOf(s)+len(s.Name))
		svcW = max(svcW, len(s.Service))
	}
	var b strings.Builder
	fmt.Fprintf(&b, "trace %s\n", spans[0].TraceID)
	var walk func(s Span, depth int)
	walk = func(s Span, depth int) {
		fmt.Fprintf(&b, "%-*s  %-*s +%6.1f ms %7.1f ms", nameW, strings.Repeat("  ", depth)+s.Name, svcW, s.Service,
			float64(s.Start.Sub(start).Microseconds())/1000, float64(s.End.Sub(s.Start).Microseconds())/1000)
		for _, k := range []string{"idem.outcome", "idem.cached", "idem.attempts", "idem.key.sha256", "messaging.message.id"} {
			if v, ok := s.Attrs[k]; ok {
				fmt.Fprintf(&b, " %s=%s", strings.TrimPrefix(k, "idem."), v)
			}
		}
		if s.Error != "" {
			fmt.Fprintf(&b, " %s", s.Error)
		}
		b.WriteString("\n")
		kids := children[s.SpanID]
		slices.SortFunc(kids, func(a, b Span) int { return a.Start.Compare(b.Start) })
		for _, k := range kids {
			walk(k, depth+1)
		}
	}
	slices.SortFunc(roots, func(a, b Span) int { return a.Start.Compare(b.Start) })
	for _, r := range roots {
		walk(r, 1)
	}
	return b.String()
}
