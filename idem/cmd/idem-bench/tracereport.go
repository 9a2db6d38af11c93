package main

import "fmt"

// What tracing costs: BenchmarkTracing's first deliveries with no
// TracerProvider installed and with OpenTelemetry's SDK recording each.
const (
	tracingNone = "BenchmarkTracing/none"
	tracingSDK  = "BenchmarkTracing/sdk"
)

func tracingPair(cpu []benchResult) (none, sdk benchResult, ok bool) {
	var n, s bool
	for _, c := range cpu {
		switch c.name {
		case tracingNone:
			none, n = c, true
		case tracingSDK:
			sdk, s = c, true
		}
	}
	return none, sdk, n && s
}

func tracingParagraph(cpu []benchResult) string {
	none, sdk, ok := tracingPair(cpu)
	if !ok {
		return ""
	}
	return fmt.Sprintf("\nTracing (OpenTelemetry): with no TracerProvider installed a delivery starts no span, not even a no-op one (%s: %.1f µs CPU, %.0f allocations). With the SDK recording every delivery and its transaction and exporting them in batches, as the ADOT layer's does (%s, the exporter keeping nothing): %.1f µs CPU and %.0f allocations per message, %+.1f µs and %+.0f allocations: the SDK's cost of two spans.\n",
		tracingNone, none.cpu/1000, none.allocs, tracingSDK, sdk.cpu/1000, sdk.allocs, (sdk.cpu-none.cpu)/1000, sdk.allocs-none.allocs)
}

func tracingTargets(cpu []benchResult) []target {
	none, sdk, ok := tracingPair(cpu)
	if !ok {
		return nil
	}
	d := (sdk.cpu - none.cpu) / 1000
	return []target{{"tracing with the SDK < 20 µs CPU more per message", fmt.Sprintf("%+.1f µs (%.1f with, %.1f without)", d, sdk.cpu/1000, none.cpu/1000), d < 20}}
}
