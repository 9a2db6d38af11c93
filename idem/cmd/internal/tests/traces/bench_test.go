package traces_test

import (
	"context"
	"io"
	"log/slog"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/idemkit/kit/idem"
)

// BenchmarkTracing is what tracing costs a first delivery, the DynamoDB
// call answered in-process: with no TracerProvider installed (none), and
// with OpenTelemetry's SDK recording every delivery and its transaction
// and exporting them in batches, as the ADOT layer's does, to an exporter
// that keeps nothing (sdk).
func BenchmarkTracing(b *testing.B) {
	for _, bc := range []struct {
		name string
		tp   func() trace.TracerProvider
	}{
		{"none", func() trace.TracerProvider { return nil }},
		{"sdk", func() trace.TracerProvider {
			return sdktrace.NewTracerProvider(sdktrace.WithBatcher(discard{}), sdktrace.WithSampler(sdktrace.AlwaysSample()))
		}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			tp := bc.tp()
			store, err := idem.New(fakeTx{}, "processed", func(o *idem.Options) {
				o.Logger = slog.New(slog.NewJSONHandler(io.Discard, nil))
				o.TracerProvider = tp
			})
			if err != nil {
				b.Fatal(err)
			}
			msg := idem.Message{ID: "evt_001", Source: "credits", Payload: benchPayload}
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				if _, err := store.Process(ctx, msg, benchHandler); err != nil {
					b.Fatal(err)
				}
			}
			if p, ok := tp.(*sdktrace.TracerProvider); ok {
				_ = p.Shutdown(ctx)
			}
		})
	}
}

// discard is an exporter that keeps nothing.
type discard struct{}

func (discard) ExportSpans(context.Context, []sdktrace.ReadOnlySpan) error { return nil }
func (discard) Shutdown(context.Context) error                             { return nil }
