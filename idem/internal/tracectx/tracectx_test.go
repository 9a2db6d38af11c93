package tracectx

import (
	"testing"
)

// TestParse: W3C traceparent and X-Ray headers in, a span context out, or
// false for anything malformed, never a panic.
func TestParse(t *testing.T) {
	for _, tc := range []struct {
		name, in, trace, span string
		sampled, ok           bool
	}{
		{"sampled", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01", "0af7651916cd43dd8448eb211c80319c", "b7ad6b7169203331", true, true},
		{"not sampled", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00", "0af7651916cd43dd8448eb211c80319c", "b7ad6b7169203331", false, true},
		{"empty", "", "", "", false, false},
		{"short", "00-0af7651916cd43dd8448eb211c80319c-b7ad", "", "", false, false},
		{"zero trace id", "00-00000000000000000000000000000000-b7ad6b7169203331-01", "", "", false, false},
		{"not hex", "00-0af7651916cd43dd8448eb211c80319z-b7ad6b7169203331-01", "", "", false, false},
		{"version ff", "ff-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01", "", "", false, false},
		{"sampled with another flag", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-03", "0af7651916cd43dd8448eb211c80319c", "b7ad6b7169203331", true, true},
		{"a later version's extra field", "01-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01-what", "0af7651916cd43dd8448eb211c80319c", "b7ad6b7169203331", true, true},
		{"version 00 with an extra field", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01-x", "", "", false, false},
		{"uppercase", "00-0AF7651916CD43DD8448EB211C80319C-B7AD6B7169203331-01", "", "", false, false},
		{"flags not hex", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-zz", "", "", false, false},
		{"version not hex", "zz-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01", "", "", false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sc, ok := Parse(tc.in)
			if ok != tc.ok || (ok && (sc.TraceID().String() != tc.trace || sc.SpanID().String() != tc.span || sc.IsSampled() != tc.sampled || !sc.IsRemote())) {
				t.Errorf("Parse(%q) = %v %v", tc.in, sc, ok)
			}
		})
	}
}

// FuzzParse: no input makes either parser panic, and what Parse accepts
// writes back as it was read.
func FuzzParse(f *testing.F) {
	f.Add("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01")
	f.Add("Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1")
	f.Fuzz(func(t *testing.T, s string) {
		if sc, ok := Parse(s); ok && !sc.IsValid() {
			t.Errorf("Parse(%q) accepted an invalid context", s)
		}
		if sc, ok := ParseXRay(s); ok {
			if back, ok := ParseXRay(XRay(sc)); !ok || back.TraceID() != sc.TraceID() {
				t.Errorf("ParseXRay(%q) does not write back", s)
			}
		}
	})
}

func TestXRay(t *testing.T) {
	for _, tc := range []struct {
		name, in, trace, span string
		sampled, ok           bool
	}{
		{"the relay's", "Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1", "5759e988bd862e3fe1be46a994272793", "53995c3f42cd8ad8", true, true},
		{"any order, not sampled", "Sampled=0;Parent=53995c3f42cd8ad8;Root=1-5759e988-bd862e3fe1be46a994272793", "5759e988bd862e3fe1be46a994272793", "53995c3f42cd8ad8", false, true},
		{"no parent", "Root=1-5759e988-bd862e3fe1be46a994272793;Sampled=1", "", "", false, false},
		{"bad root", "Root=2-5759e988;Parent=53995c3f42cd8ad8", "", "", false, false},
		{"empty", "", "", "", false, false},
		{"garbage", ";;==;Root=;Parent=", "", "", false, false},
		{"root parts of the wrong lengths", "Root=1-5759e988bd-862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1", "", "", false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sc, ok := ParseXRay(tc.in)
			if ok != tc.ok || (ok && (sc.TraceID().String() != tc.trace || sc.SpanID().String() != tc.span || sc.IsSampled() != tc.sampled)) {
				t.Fatalf("ParseXRay(%q) = %v %v", tc.in, sc, ok)
			}
			if ok {
				if back, _ := ParseXRay(XRay(sc)); back.TraceID() != sc.TraceID() || back.SpanID() != sc.SpanID() || back.IsSampled() != sc.IsSampled() {
					t.Errorf("XRay(%v) = %q does not read back", sc, XRay(sc))
				}
			}
		})
	}
}
