package telemetry

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// exporter sends spans as OTLP/HTTP with the JSON encoding, which the
// OTLP specification defines beside protobuf and every collector takes
// (the ADOT layer's among them): the Go exporter speaks protobuf alone,
// and its protobuf and gRPC modules would double a function's binary.
type exporter struct {
	url     string
	headers map[string]string
	client  *http.Client
}

// newExporter reads the endpoint, headers and timeout from the OTEL_*
// variables, as the SDK exporters do.
func newExporter() (*exporter, error) {
	url := os.Getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
	if url == "" {
		base := strings.TrimSuffix(os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT"), "/")
		if base == "" {
			return nil, fmt.Errorf("telemetry: no OTEL_EXPORTER_OTLP_ENDPOINT")
		}
		url = base + "/v1/traces"
	}
	timeout := 10 * time.Second
	if ms, err := strconv.Atoi(os.Getenv("OTEL_EXPORTER_OTLP_TIMEOUT")); err == nil && ms > 0 {
		timeout = time.Duration(ms) * time.Millisecond
	}
	headers := map[string]string{}
	for k, v := range keyValues(os.Getenv("OTEL_EXPORTER_OTLP_HEADERS")) {
		headers[k] = v
	}
	return &exporter{url: url, headers: headers, client: &http.Client{Timeout: timeout}}, nil
}

// export posts spans as one OTLP request.
func (e *exporter) export(ctx context.Context, res []attribute.KeyValue, spans []finished) error {
	if len(spans) == 0 {
		return nil
	}
	body, err := json.Marshal(request(res, spans))
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, e.url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	for k, v := range e.headers {
		req.Header.Set(k, v)
	}
	resp, err := e.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("telemetry: OTLP endpoint %s answered %s", e.url, resp.Status)
	}
	return nil
}

// OTLP's JSON encoding (opentelemetry-proto, "JSON Protobuf Encoding"):
// ids in hex, 64-bit numbers as strings, enums as numbers.
type (
	otlpRequest struct {
		ResourceSpans []resourceSpans `json:"resourceSpans"`
	}
	resourceSpans struct {
		Resource   resource     `json:"resource"`
		ScopeSpans []scopeSpans `json:"scopeSpans"`
	}
	resource struct {
		Attributes []keyValue `json:"attributes"`
	}
	scopeSpans struct {
		Scope struct {
			Name    string `json:"name"`
			Version string `json:"version,omitempty"`
		} `json:"scope"`
		Spans []jsonSpan `json:"spans"`
	}
	jsonSpan struct {
		TraceID      string     `json:"traceId"`
		SpanID       string     `json:"spanId"`
		ParentSpanID string     `json:"parentSpanId,omitempty"`
		Name         string     `json:"name"`
		Kind         int        `json:"kind"`
		Start        string     `json:"startTimeUnixNano"`
		End          string     `json:"endTimeUnixNano"`
		Attributes   []keyValue `json:"attributes,omitempty"`
		Links        []link     `json:"links,omitempty"`
		Status       status     `json:"status"`
	}
	link struct {
		TraceID string `json:"traceId"`
		SpanID  string `json:"spanId"`
	}
	status struct {
		Code    int    `json:"code,omitempty"`
		Message string `json:"message,omitempty"`
	}
	keyValue struct {
		Key   string `json:"key"`
		Value value  `json:"value"`
	}
	value struct {
		String *string  `json:"stringValue,omitempty"`
		Bool   *bool    `json:"boolValue,omitempty"`
		Int    *string  `json:"intValue,omitempty"`
		Double *float64 `json:"doubleValue,omitempty"`
		Array  *struct {
			Values []value `json:"values"`
		} `json:"arrayValue,omitempty"`
	}
)

func request(res []attribute.KeyValue, spans []finished) otlpRequest {
	byScope := map[string]*scopeSpans{}
	rs := resourceSpans{Resource: resource{Attributes: attrs(res)}}
	var order []string
	for _, s := range spans {
		ss, ok := byScope[s.scope]
		if !ok {
			ss = &scopeSpans{}
			ss.Scope.Name = s.scope
			byScope[s.scope] = ss
			order = append(order, s.scope)
		}
		out := jsonSpan{TraceID: s.sc.TraceID().String(), SpanID: s.sc.SpanID().String(), Name: s.name, Kind: otlpKind(s.kind),
			Start: strconv.FormatInt(s.start.UnixNano(), 10), End: strconv.FormatInt(s.end.UnixNano(), 10), Attributes: attrs(s.attrs)}
		if s.parent.IsValid() {
			out.ParentSpanID = s.parent.SpanID().String()
		}
		for _, l := range s.links {
			out.Links = append(out.Links, link{TraceID: l.SpanContext.TraceID().String(), SpanID: l.SpanContext.SpanID().String()})
		}
		switch s.code {
		case codes.Ok:
			out.Status.Code = 1
		case codes.Error:
			out.Status.Code, out.Status.Message = 2, s.desc
		}
		ss.Spans = append(ss.Spans, out)
	}
	for _, name := range order {
		rs.ScopeSpans = append(rs.ScopeSpans, *byScope[name])
	}
	return otlpRequest{ResourceSpans: []resourceSpans{rs}}
}

// otlpKind is OTLP's SpanKind number: the API's, which counts from
// Unspecified as OTLP does; unspecified is internal, as the SDK takes it.
func otlpKind(k trace.SpanKind) int {
	if k == trace.SpanKindUnspecified {
		return int(trace.SpanKindInternal)
	}
	return int(k)
}

func attrs(kvs []attribute.KeyValue) []keyValue {
	out := make([]keyValue, 0, len(kvs))
	for _, kv := range kvs {
		out = append(out, keyValue{Key: string(kv.Key), Value: valueOf(kv.Value)})
	}
	return out
}

func valueOf(v attribute.Value) value {
	switch v.Type() {
	case attribute.BOOL:
		b := v.AsBool()
		return value{Bool: &b}
	case attribute.INT64:
		s := strconv.FormatInt(v.AsInt64(), 10)
		return value{Int: &s}
	case attribute.FLOAT64:
		f := v.AsFloat64()
		if math.IsNaN(f) || math.IsInf(f, 0) { // JSON has no number for them
			s := strconv.FormatFloat(f, 'g', -1, 64)
			return value{String: &s}
		}
		return value{Double: &f}
	case attribute.STRINGSLICE:
		arr := &struct {
			Values []value `json:"values"`
		}{}
		for _, s := range v.AsStringSlice() {
			arr.Values = append(arr.Values, value{String: &s})
		}
		return value{Array: arr}
	}
	s := v.String()
	return value{String: &s}
}
