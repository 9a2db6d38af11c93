package localstack

import (
	"compress/gzip"
	"context"
	"encoding/base64"
	"encoding/hex"
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

	collectortrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
)

// Traces receives the functions' spans as an OTLP collector does (the
// ADOT Lambda layer's, on AWS): OTLP over HTTP, protobuf-encoded as the
// reference functions' OpenTelemetry SDK sends them, or JSON-encoded, each
// decoded with OpenTelemetry's own protobuf types. It keeps them by trace,
// for a person to read (idem-local -traces) and for tests.
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

// receive takes one OTLP export request, in either of OTLP/HTTP's
// encodings: binary protobuf (what the SDK's otlptracehttp sends by
// default) or JSON (OTEL_EXPORTER_OTLP_PROTOCOL=http/json), gzipped or
// not, and answers in the request's encoding.
func (t *Traces) receive(w http.ResponseWriter, r *http.Request) {
	ct, _, _ := strings.Cut(r.Header.Get("Content-Type"), ";")
	if ct != contentProtobuf && ct != contentJSON {
		http.Error(w, "an OTLP/HTTP export is "+contentProtobuf+" or "+contentJSON+", not "+strconv.Quote(ct), http.StatusUnsupportedMediaType)
		return
	}
	body := io.Reader(r.Body)
	if strings.EqualFold(r.Header.Get("Content-Encoding"), "gzip") {
		zr, err := gzip.NewReader(r.Body)
		if err != nil {
			http.Error(w, "Content-Encoding gzip: "+err.Error(), http.StatusBadRequest)
			return
		}
		defer zr.Close()
		body = zr
	}
	b, err := io.ReadAll(io.LimitReader(body, 16<<20))
	if err != nil {
		http.Error(w, "reading the export: "+err.Error(), http.StatusBadRequest)
		return
	}
	var req collectortrace.ExportTraceServiceRequest
	if ct == contentJSON {
		err = protojson.UnmarshalOptions{DiscardUnknown: true}.Unmarshal(b, &req)
	} else {
		err = proto.Unmarshal(b, &req)
	}
	if err != nil {
		http.Error(w, "not an OTLP trace export request ("+ct+"): "+err.Error(), http.StatusBadRequest)
		return
	}
	var got []Span
	for _, rs := range req.ResourceSpans {
		service := attrMap(rs.GetResource().GetAttributes())["service.name"]
		for _, ss := range rs.ScopeSpans {
			for _, s := range ss.Spans {
				sp := Span{TraceID: otlpID(s.TraceId), SpanID: otlpID(s.SpanId), ParentID: otlpID(s.ParentSpanId), Name: s.Name, Service: service,
					Kind: int(s.Kind), Start: time.Unix(0, int64(s.StartTimeUnixNano)), End: time.Unix(0, int64(s.EndTimeUnixNano)), Attrs: attrMap(s.Attributes)}
				if s.GetStatus().GetCode() == tracepb.Status_STATUS_CODE_ERROR {
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
	// An ExportTraceServiceResponse, empty: everything was taken.
	w.Header().Set("Content-Type", ct)
	if ct == contentJSON {
		_, _ = w.Write([]byte("{}"))
	}
}

// OTLP/HTTP's content types.
const (
	contentProtobuf = "application/x-protobuf"
	contentJSON     = "application/json"
)

// otlpID is a trace or span id in lowercase hex, as OTLP's JSON encoding
// writes it. Protobuf carries the id's bytes (16 or 8, or none). That
// JSON encoding writes them in hex where protojson reads bytes as base64,
// so from JSON an id arrives as the 24 or 12 bytes its hex digits decode
// to as base64, and encoding those as base64 gives the hex back.
func otlpID(b []byte) string {
	if len(b) == 24 || len(b) == 12 {
		return strings.ToLower(base64.StdEncoding.EncodeToString(b))
	}
	return hex.EncodeToString(b)
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

// attrMap is attributes as text, for a person to read.
func attrMap(kvs []*commonpb.KeyValue) map[string]string {
	m := make(map[string]string, len(kvs))
	for _, a := range kvs {
		m[a.Key] = anyValue(a.Value)
	}
	return m
}

func anyValue(v *commonpb.AnyValue) string {
	switch v := v.GetValue().(type) {
	case *commonpb.AnyValue_StringValue:
		return v.StringValue
	case *commonpb.AnyValue_IntValue:
		return strconv.FormatInt(v.IntValue, 10)
	case *commonpb.AnyValue_BoolValue:
		return strconv.FormatBool(v.BoolValue)
	case *commonpb.AnyValue_DoubleValue:
		return strconv.FormatFloat(v.DoubleValue, 'g', -1, 64)
	case *commonpb.AnyValue_ArrayValue:
		var vals []string
		for _, e := range v.ArrayValue.GetValues() {
			vals = append(vals, anyValue(e))
		}
		return "[" + strings.Join(vals, ",") + "]"
	}
	return ""
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
