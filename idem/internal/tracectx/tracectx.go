// Package tracectx reads and writes the trace context a message carries
// between the kit's functions: W3C traceparent (stored with an outbox
// item, sent by webhooks' callers) and AWS's X-Ray trace header (an SQS
// message's AWSTraceHeader, an EventBridge entry's TraceHeader), the same
// ids in two spellings.
package tracectx

import (
	"encoding/hex"
	"strings"

	"go.opentelemetry.io/otel/trace"
)

// Parse reads a W3C traceparent ("00-<trace id>-<span id>-<flags>").
func Parse(traceparent string) (trace.SpanContext, bool) {
	parts := strings.Split(strings.TrimSpace(traceparent), "-")
	if len(parts) < 4 || len(parts[0]) != 2 || parts[0] == "ff" {
		return trace.SpanContext{}, false
	}
	return spanContext(parts[1], parts[2], parts[3] == "01")
}

// XRay writes sc as an X-Ray trace header: the trace id's first 8 hex
// digits are the Root's epoch part, the rest its unique part.
func XRay(sc trace.SpanContext) string {
	if !sc.IsValid() {
		return ""
	}
	t := sc.TraceID().String()
	sampled := "0"
	if sc.IsSampled() {
		sampled = "1"
	}
	return "Root=1-" + t[:8] + "-" + t[8:] + ";Parent=" + sc.SpanID().String() + ";Sampled=" + sampled
}

// ParseXRay reads an X-Ray trace header ("Root=1-…-…;Parent=…;Sampled=…"),
// which needs a Parent to continue.
func ParseXRay(header string) (trace.SpanContext, bool) {
	var root, parent string
	sampled := false
	for _, part := range strings.Split(header, ";") {
		k, v, _ := strings.Cut(strings.TrimSpace(part), "=")
		switch k {
		case "Root":
			r := strings.Split(v, "-")
			if len(r) != 3 || r[0] != "1" {
				return trace.SpanContext{}, false
			}
			root = r[1] + r[2]
		case "Parent":
			parent = v
		case "Sampled":
			sampled = v == "1"
		}
	}
	return spanContext(root, parent, sampled)
}

func spanContext(traceID, spanID string, sampled bool) (trace.SpanContext, bool) {
	var cfg trace.SpanContextConfig
	if len(traceID) != 32 || len(spanID) != 16 {
		return trace.SpanContext{}, false
	}
	if _, err := hex.Decode(cfg.TraceID[:], []byte(traceID)); err != nil {
		return trace.SpanContext{}, false
	}
	if _, err := hex.Decode(cfg.SpanID[:], []byte(spanID)); err != nil {
		return trace.SpanContext{}, false
	}
	if sampled {
		cfg.TraceFlags = trace.FlagsSampled
	}
	cfg.Remote = true
	sc := trace.NewSpanContext(cfg)
	return sc, sc.IsValid()
}
