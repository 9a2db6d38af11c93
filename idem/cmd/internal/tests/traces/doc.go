// Package traces tests the spans of the library and its adapters with
// OpenTelemetry's SDK, which the library does not depend on: it records
// them with sdk/trace/tracetest. Apart from the library so that the SDK
// enters no user's module graph; its tests are its whole content.
package traces
