// Package tracectx reads and writes the trace context a message carries
// between the kit's functions: W3C traceparent (stored with an outbox
// item, sent by webhooks' callers) and AWS's X-Ray trace header (an SQS
// message's AWSTraceHeader, an EventBridge entry's TraceHeader), the same
// ids in two spellings.
package tracectx

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"

	"go.opentelemetry.io/otel/trace"
)

// Parse reads a W3C traceparent ("00-<trace id>-<span id>-<flags>", in
// lowercase hex; a later version may append fields, version 00 may not).
func Parse(traceparent string) (trace.SpanContext, bool) {
	parts := strings.Split(strings.TrimSpace(traceparent), "-")
	if len(parts) < 4 || !lowerHex(parts[0], 2) || parts[0] == "ff" || parts[0] == "00" && len(parts) != 4 || !lowerHex(parts[3], 2) {
		return trace.SpanContext{}, false
	}
	flags, _ := hex.DecodeString(parts[3])
	return spanContext(parts[1], parts[2], flags[0]&1 == 1) // bit 0: sampled; the others are not ours to read
}

// lowerHex reports whether s is n lowercase hex digits.
func lowerHex(s string, n int) bool {
	if len(s) != n {
		return false
	}
	for _, c := range []byte(s) {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
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
			if len(r) != 3 || r[0] != "1" || len(r[1]) != 8 || len(r[2]) != 24 {
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
	if !lowerHex(traceID, 32) || !lowerHex(spanID, 16) {
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

// KeyHash is a claim key as spans name it (idem.key.sha256): its SHA-256,
// the first 8 bytes in hex, so that a trace can be found by key without
// the key, which may be personal data, in clear.
func KeyHash(key string) string {
	sum := sha256.Sum256([]byte(key))
	return hex.EncodeToString(sum[:8])
}
