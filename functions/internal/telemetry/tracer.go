package telemetry

import (
	"context"
	"crypto/rand"
	"fmt"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/embedded"
)

// A TracerProvider that keeps every span and sends them at each flush:
// what a Lambda function needs of an SDK (no batching across invokes),
// without the SDK's weight in a function's binary (0.8 MB, which took the
// webhook function past its 10 MB budget). It samples as the SDK's
// default does, by the parent: a trace a caller marked not sampled (an
// AWSTraceHeader's Sampled=0, a traceparent's flags) records nothing here
// and stays not sampled downstream; a trace begun here is sampled.

type provider struct {
	embedded.TracerProvider
	resource []attribute.KeyValue
	exp      *exporter

	mu    sync.Mutex
	ended []finished
}

type tracer struct {
	embedded.Tracer
	p     *provider
	scope string
}

func (p *provider) Tracer(name string, _ ...trace.TracerOption) trace.Tracer {
	return &tracer{p: p, scope: name}
}

// drop forgets the spans ended so far, unsent.
func (p *provider) drop() {
	p.mu.Lock()
	p.ended = nil
	p.mu.Unlock()
}

// flush sends the spans ended so far.
func (p *provider) flush(ctx context.Context) error {
	p.mu.Lock()
	spans := p.ended
	p.ended = nil
	p.mu.Unlock()
	return p.exp.export(ctx, p.resource, spans)
}

// finished is an ended span, as it is exported.
type finished struct {
	scope      string
	sc, parent trace.SpanContext
	name       string
	kind       trace.SpanKind
	start, end time.Time
	attrs      []attribute.KeyValue
	links      []trace.Link
	code       codes.Code
	desc       string
}

type span struct {
	embedded.Span
	t  *tracer
	mu sync.Mutex
	f  finished
	on bool // not ended yet
}

func (t *tracer) Start(ctx context.Context, name string, opts ...trace.SpanStartOption) (context.Context, trace.Span) {
	c := trace.NewSpanStartConfig(opts...)
	parent := trace.SpanContextFromContext(ctx)
	if c.NewRoot() {
		parent = trace.SpanContext{}
	}
	cfg := trace.SpanContextConfig{TraceFlags: trace.FlagsSampled, TraceState: parent.TraceState()}
	if parent.IsValid() {
		cfg.TraceID = parent.TraceID()
		cfg.TraceFlags = parent.TraceFlags()
	} else {
		_, _ = rand.Read(cfg.TraceID[:])
	}
	_, _ = rand.Read(cfg.SpanID[:])
	if !cfg.TraceFlags.IsSampled() { // a span of its own id, carried on, recording nothing
		ctx = trace.ContextWithSpanContext(ctx, trace.NewSpanContext(cfg))
		return ctx, trace.SpanFromContext(ctx)
	}
	start := c.Timestamp()
	if start.IsZero() {
		start = time.Now()
	}
	s := &span{t: t, on: true, f: finished{scope: t.scope, sc: trace.NewSpanContext(cfg), parent: parent, name: name,
		kind: c.SpanKind(), start: start, attrs: c.Attributes(), links: c.Links()}}
	return trace.ContextWithSpan(ctx, s), s
}

func (s *span) End(opts ...trace.SpanEndOption) {
	c := trace.NewSpanEndConfig(opts...)
	s.mu.Lock()
	if !s.on {
		s.mu.Unlock()
		return
	}
	s.on = false
	s.f.end = c.Timestamp()
	if s.f.end.IsZero() {
		s.f.end = time.Now()
	}
	f := s.f
	s.mu.Unlock()
	p := s.t.p
	p.mu.Lock()
	p.ended = append(p.ended, f)
	p.mu.Unlock()
}

func (s *span) AddEvent(string, ...trace.EventOption) {}

func (s *span) AddLink(l trace.Link) {
	s.mu.Lock()
	if s.on {
		s.f.links = append(s.f.links, l)
	}
	s.mu.Unlock()
}

func (s *span) IsRecording() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.on
}

// RecordError names the error by its type: a message may carry what a
// trace should not (the kit's name the claim key).
func (s *span) RecordError(err error, _ ...trace.EventOption) {
	if err != nil {
		s.SetAttributes(attribute.String("error.type", fmt.Sprintf("%T", err)))
	}
}

func (s *span) SpanContext() trace.SpanContext { return s.f.sc }

// An ended span takes no more changes, as the SDK's.

func (s *span) SetStatus(code codes.Code, description string) {
	s.mu.Lock()
	if s.on {
		s.f.code, s.f.desc = code, description
	}
	s.mu.Unlock()
}

func (s *span) SetName(name string) {
	s.mu.Lock()
	if s.on {
		s.f.name = name
	}
	s.mu.Unlock()
}

func (s *span) SetAttributes(kv ...attribute.KeyValue) {
	s.mu.Lock()
	if s.on {
		s.f.attrs = append(s.f.attrs, kv...)
	}
	s.mu.Unlock()
}

func (s *span) TracerProvider() trace.TracerProvider { return s.t.p }
