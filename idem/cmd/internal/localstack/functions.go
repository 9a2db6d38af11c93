package localstack

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// FunctionSpec is what the template says about a function, resolved
// against the local stack.
type FunctionSpec struct {
	LogicalID   string
	Runtime     string
	Handler     string
	BuildMethod string
	Timeout     time.Duration
	MemorySize  int
	// Env is the function's Environment.Variables, Globals included, with
	// every intrinsic resolved to its local value.
	Env map[string]string
	// LogFormat and LogLevel are LoggingConfig's LogFormat and
	// ApplicationLogLevel.
	LogFormat, LogLevel string
	// MaxConcurrency is CapacityProviderConfig's
	// PerExecutionEnvironmentMaxConcurrency: the invokes one environment
	// runs at once on Lambda Managed Instances. 0 for a function on
	// Lambda's default compute, or when the template sets none.
	MaxConcurrency int
	SQS            []SQSEventSource
	Streams        []StreamEventSource
	Routes         []Route
	// Ignored names the events the local stack does not emulate.
	Ignored []string
}

// SQSEventSource is a function's SQS event: the event source mapping the
// stack's poller emulates.
type SQSEventSource struct {
	Function string
	Event    string
	QueueARN string
	// BatchSize is at most how many records one invoke gets. Defaults to 10.
	BatchSize int
	// BatchingWindow is how long the poller gathers a batch larger than
	// the 10 records one ReceiveMessage returns.
	BatchingWindow          time.Duration
	ReportBatchItemFailures bool
	// MaximumConcurrency bounds the concurrent invokes of this source;
	// 0 when the template sets none.
	MaximumConcurrency int
	Enabled            bool
}

// StreamEventSource is a function's DynamoDB event: the event source
// mapping the stack's stream poller emulates.
type StreamEventSource struct {
	Function string
	Event    string
	// StreamARN is the table's stream, such as !GetAtt Table.StreamArn.
	StreamARN string
	// StartingPosition is TRIM_HORIZON or LATEST, for the shards there
	// are when the poller starts; later shards are read from their start.
	StartingPosition string
	// BatchSize is at most how many records one invoke gets. Defaults to
	// 100.
	BatchSize int
	// BatchingWindow is how long the poller gathers records for a batch
	// before it invokes with fewer than BatchSize. Defaults to 0.
	BatchingWindow             time.Duration
	ReportBatchItemFailures    bool
	BisectBatchOnFunctionError bool
	// MaximumRetryAttempts is how many times a failed batch is retried
	// before its records go to OnFailure. Defaults to -1: until the
	// records expire, which the poller caps (StreamPoller.RetryLimit).
	MaximumRetryAttempts int
	// MaximumRecordAge sends a record older than this to OnFailure
	// instead of the function. Defaults to 0: no limit (the template's -1).
	MaximumRecordAge time.Duration
	// Filters are FilterCriteria's patterns; a record no filter matches
	// is checkpointed, never delivered. Defaults to none: all pass.
	Filters []*Filter
	// OnFailure is DestinationConfig.OnFailure.Destination, or "".
	OnFailure string
	Enabled   bool
}

// Route is one HttpApi route of a function.
type Route struct {
	Function string
	Event    string
	// Method is an HTTP method or "ANY".
	Method string
	// Path is the route's path, such as "/webhooks/credits",
	// "/items/{id}" or "/{proxy+}", or "$default".
	Path string
}

// Key is the route key API Gateway puts in an event, such as
// "POST /webhooks/credits".
func (r Route) Key() string {
	if r.Path == "$default" {
		return "$default"
	}
	return r.Method + " " + r.Path
}

// functionSpec reads a serverless function's spec. SAM's defaults apply:
// a timeout of 3 seconds, 128 MB.
func (s *Stack) functionSpec(id string) (*FunctionSpec, error) {
	props := s.Template.FunctionProperties(id)
	ev, err := s.resources.Eval(props)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", id, err)
	}
	p := mapOf(ev)
	fs := &FunctionSpec{
		LogicalID:   id,
		Runtime:     scalarString(p["Runtime"]),
		Handler:     scalarString(p["Handler"]),
		BuildMethod: scalarString(s.Template.Resources[id].Metadata["BuildMethod"]),
		Timeout:     3 * time.Second,
		MemorySize:  128,
		Env:         map[string]string{},
	}
	if t, ok := number(p["Timeout"]); ok {
		fs.Timeout = time.Duration(t * float64(time.Second))
	}
	if m, ok := number(p["MemorySize"]); ok {
		fs.MemorySize = int(m)
	}
	for k, v := range mapOf(mapOf(p["Environment"])["Variables"]) {
		fs.Env[k] = scalarString(v)
	}
	if n, ok := number(mapOf(p["CapacityProviderConfig"])["PerExecutionEnvironmentMaxConcurrency"]); ok {
		fs.MaxConcurrency = int(n)
	}
	lc := mapOf(p["LoggingConfig"])
	fs.LogFormat = scalarString(lc["LogFormat"])
	fs.LogLevel = scalarString(lc["ApplicationLogLevel"])
	if !strings.HasPrefix(fs.Runtime, "provided") {
		return nil, fmt.Errorf("%s: runtime %q: the local stack runs custom runtimes (provided.al2023, provided.al2) only", id, fs.Runtime)
	}
	for _, name := range sortedKeys(mapOf(p["Events"])) {
		e := mapOf(mapOf(p["Events"])[name])
		ep := mapOf(e["Properties"])
		switch typ := scalarString(e["Type"]); typ {
		case "SQS":
			src := SQSEventSource{Function: id, Event: name, QueueARN: scalarString(ep["Queue"]), BatchSize: 10, Enabled: true}
			if n, ok := number(ep["BatchSize"]); ok {
				src.BatchSize = int(n)
			}
			if n, ok := number(ep["MaximumBatchingWindowInSeconds"]); ok {
				src.BatchingWindow = time.Duration(n) * time.Second
			}
			for _, t := range listOf(ep["FunctionResponseTypes"]) {
				if scalarString(t) == "ReportBatchItemFailures" {
					src.ReportBatchItemFailures = true
				}
			}
			if n, ok := number(mapOf(ep["ScalingConfig"])["MaximumConcurrency"]); ok {
				src.MaximumConcurrency = int(n)
			}
			if en, ok := ep["Enabled"]; ok && !isTrue(en) {
				src.Enabled = false
			}
			if src.BatchSize < 1 || src.BatchSize > 10000 {
				return nil, fmt.Errorf("%s: event %s: BatchSize %d out of range", id, name, src.BatchSize)
			}
			fs.SQS = append(fs.SQS, src)
		case "DynamoDB":
			src, err := streamEventSource(id, name, ep)
			if err != nil {
				return nil, fmt.Errorf("%s: event %s: %w", id, name, err)
			}
			fs.Streams = append(fs.Streams, *src)
		case "HttpApi":
			r := Route{Function: id, Event: name, Method: strings.ToUpper(scalarString(ep["Method"])), Path: scalarString(ep["Path"])}
			if r.Method == "" || r.Method == "X-AMAZON-APIGATEWAY-ANY-METHOD" {
				r.Method = "ANY"
			}
			if r.Path == "" {
				r.Path = "$default"
			}
			fs.Routes = append(fs.Routes, r)
		default:
			fs.Ignored = append(fs.Ignored, name+" ("+typ+")")
		}
	}
	return fs, nil
}

// streamEventSource reads a DynamoDB event's properties, with Lambda's
// defaults and limits.
func streamEventSource(id, name string, ep map[string]any) (*StreamEventSource, error) {
	src := &StreamEventSource{Function: id, Event: name, StreamARN: scalarString(ep["Stream"]),
		StartingPosition: scalarString(ep["StartingPosition"]), BatchSize: 100, MaximumRetryAttempts: -1, Enabled: true}
	if src.StreamARN == "" {
		return nil, errors.New("the Stream property is missing")
	}
	if p := src.StartingPosition; p != "TRIM_HORIZON" && p != "LATEST" {
		return nil, fmt.Errorf("StartingPosition %q: want TRIM_HORIZON or LATEST", p)
	}
	if n, ok := number(ep["BatchSize"]); ok {
		src.BatchSize = int(n)
	}
	if src.BatchSize < 1 || src.BatchSize > 10000 {
		return nil, fmt.Errorf("BatchSize %d out of range", src.BatchSize)
	}
	if n, ok := number(ep["MaximumBatchingWindowInSeconds"]); ok {
		src.BatchingWindow = time.Duration(n) * time.Second
	}
	for _, t := range listOf(ep["FunctionResponseTypes"]) {
		if scalarString(t) == "ReportBatchItemFailures" {
			src.ReportBatchItemFailures = true
		}
	}
	src.BisectBatchOnFunctionError = isTrue(ep["BisectBatchOnFunctionError"])
	if n, ok := number(ep["MaximumRetryAttempts"]); ok {
		src.MaximumRetryAttempts = int(n)
	}
	if src.MaximumRetryAttempts < -1 || src.MaximumRetryAttempts > 10000 {
		return nil, fmt.Errorf("MaximumRetryAttempts %d out of range", src.MaximumRetryAttempts)
	}
	if n, ok := number(ep["MaximumRecordAgeInSeconds"]); ok && n != -1 {
		if n < 60 || n > 604800 {
			return nil, fmt.Errorf("MaximumRecordAgeInSeconds %v out of range", n)
		}
		src.MaximumRecordAge = time.Duration(n) * time.Second
	}
	for _, f := range listOf(mapOf(ep["FilterCriteria"])["Filters"]) {
		filter, err := ParseFilter(scalarString(mapOf(f)["Pattern"]))
		if err != nil {
			return nil, err
		}
		src.Filters = append(src.Filters, filter)
	}
	src.OnFailure = scalarString(mapOf(mapOf(ep["DestinationConfig"])["OnFailure"])["Destination"])
	if en, ok := ep["Enabled"]; ok && !isTrue(en) {
		src.Enabled = false
	}
	return src, nil
}
