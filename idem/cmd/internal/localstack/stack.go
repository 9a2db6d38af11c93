package localstack

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/idemkit/kit/idem/cmd/internal/receipts"
	"github.com/idemkit/kit/idem/idemtest"
)

// defaultWait bounds the wait for a table to become active.
const defaultWait = 2 * time.Minute

// Stack is a template running locally. Stop it with Stop.
type Stack struct {
	Template *Template
	Options  Options
	// DynamoDBEndpoint and SQSEndpoint are the endpoints in use.
	DynamoDBEndpoint, SQSEndpoint string
	// APIURL is the base URL of the HttpApi routes, or "" when there are
	// none.
	APIURL string
	// Tables and Queues are by logical id.
	Tables map[string]*Table
	Queues map[string]*Queue
	// Functions are the template's functions, by logical id.
	Functions map[string]*Function
	// Specs are what the template says about each function, resolved.
	Specs map[string]*FunctionSpec
	// Routes are the HttpApi routes served.
	Routes []Route
	// Pollers emulate the SQS event source mappings.
	Pollers []*Poller
	// StreamPollers emulate the DynamoDB stream event source mappings.
	StreamPollers []*StreamPoller
	// Receipts is the receipts service the functions call, or nil when
	// the stack runs none (Options.NoReceipts, or no function wants one):
	// read its calls to see how the functions called out.
	Receipts *receipts.Server
	// Traces receives the functions' spans (Options.Traces), or is nil.
	Traces *Traces

	resources *Resources
	dynamo    *idemtest.Server
	sqsSrv    *idemtest.Server
	ddb       *dynamodb.Client
	sqs       *sqs.Client
	api       *http.Server
	pollStop  context.CancelFunc
	pollWG    sync.WaitGroup
	stopOnce  sync.Once
}

// Start runs a SAM template locally: it starts (or uses) a DynamoDB and an
// SQS endpoint, creates the template's tables and queues there, builds each
// function for this machine and runs it under the Lambda Runtime Interface
// Emulator with the template's environment, serves the HttpApi routes, and
// polls the queues of the SQS events and the streams of the DynamoDB
// events.
func Start(ctx context.Context, optFns ...func(*Options)) (s *Stack, err error) {
	var o Options
	for _, fn := range optFns {
		fn(&o)
	}
	if err := o.setDefaults(); err != nil {
		return nil, err
	}
	t, err := ReadTemplate(o.Template)
	if err != nil {
		return nil, err
	}
	// A bad parameter fails before anything starts.
	if _, err := newResolver(t, o.Parameters, nil); err != nil {
		return nil, fmt.Errorf("localstack: %w", err)
	}
	s = &Stack{Template: t, Options: o, Tables: map[string]*Table{}, Queues: map[string]*Queue{},
		Functions: map[string]*Function{}, Specs: map[string]*FunctionSpec{}}
	defer func() {
		if err != nil {
			s.Stop()
			s = nil
		}
	}()
	if err := os.MkdirAll(o.BuildDir, 0o755); err != nil {
		return s, fmt.Errorf("localstack: %w", err)
	}
	if o.Traces {
		if s.Traces, err = StartTraces(o.TracesAddr); err != nil {
			return s, fmt.Errorf("localstack: %w", err)
		}
		// The functions export to it as to the ADOT layer's collector.
		env := map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": s.Traces.URL}
		for k, v := range o.Env {
			env[k] = v
		}
		o.Env = env
		s.Options.Env = env
		s.logf("traces: an OTLP endpoint on %s receives the functions' spans", s.Traces.URL)
	}

	// The servers start and the functions build at the same time.
	var (
		wg         sync.WaitGroup
		mu         sync.Mutex
		errs       []error
		rie        string
		bootstraps = map[string]string{}
	)
	fail := func(err error) {
		mu.Lock()
		errs = append(errs, err)
		mu.Unlock()
	}
	serverOpts := func(so *idemtest.ServerOptions) { so.Log = o.ServerLog }
	if o.DynamoDBEndpoint == "" {
		wg.Go(func() {
			begin := time.Now()
			s.progressf("starting DynamoDB (idemtest's local server)…")
			srv, err := idemtest.StartDynamoDB(ctx, serverOpts, func(so *idemtest.ServerOptions) { so.TTLSweepInterval = o.TTLSweepInterval })
			if err != nil {
				fail(err)
				return
			}
			s.logf("DynamoDB (idemtest's local server, pid %d) on %s, TTL sweep %s, up in %v", srv.PID(), srv.Endpoint, sweepText(o.TTLSweepInterval), since(begin))
			mu.Lock()
			s.dynamo = srv
			mu.Unlock()
		})
	}
	if o.SQSEndpoint == "" && len(t.OfType(typeQueue)) > 0 {
		wg.Go(func() {
			begin := time.Now()
			s.progressf("starting SQS (moto)…")
			srv, err := idemtest.StartSQS(ctx, serverOpts)
			if err != nil {
				fail(err)
				return
			}
			s.logf("SQS (moto, pid %d) on %s, up in %v", srv.PID(), srv.Endpoint, since(begin))
			mu.Lock()
			s.sqsSrv = srv
			mu.Unlock()
		})
	}
	// Only the functions the parameters create are built and run.
	functions, err := t.Created(o.Parameters, t.OfType(typeFunction))
	if err != nil {
		return s, fmt.Errorf("localstack: %w", err)
	}
	for _, id := range t.OfType(typeFunction) {
		if !slices.Contains(functions, id) {
			s.logf("%s is not run: its condition %s is false", id, t.Resources[id].Condition)
		}
	}
	if len(functions) > 0 {
		wg.Go(func() {
			path, err := s.buildRIE(ctx)
			if err != nil {
				fail(err)
				return
			}
			mu.Lock()
			rie = path
			mu.Unlock()
		})
	}
	for _, id := range functions {
		if path, ok := o.Bootstraps[id]; ok {
			bootstraps[id] = path
			continue
		}
		wg.Go(func() {
			path, err := s.buildFunction(ctx, id, t.FunctionProperties(id), t.Resources[id].Metadata)
			if err != nil {
				fail(err)
				return
			}
			mu.Lock()
			bootstraps[id] = path
			mu.Unlock()
		})
	}
	wg.Wait()
	if len(errs) > 0 {
		return s, errors.Join(errs...)
	}
	s.DynamoDBEndpoint, s.SQSEndpoint = o.DynamoDBEndpoint, o.SQSEndpoint
	if s.dynamo != nil {
		s.DynamoDBEndpoint = s.dynamo.Endpoint
	} else {
		s.logf("DynamoDB: %s", s.DynamoDBEndpoint)
	}
	if s.sqsSrv != nil {
		s.SQSEndpoint = s.sqsSrv.Endpoint
	} else if s.SQSEndpoint != "" {
		s.logf("SQS: %s", s.SQSEndpoint)
	}
	s.ddb = newDynamoDB(s.DynamoDBEndpoint, o.Region)
	if s.SQSEndpoint != "" {
		s.sqs = newSQS(s.SQSEndpoint, o.Region)
	}

	// Tables and queues, from the template's own definitions.
	res, err := CreateResources(ctx, t, ResourceConfig{DynamoDB: s.ddb, SQS: s.sqs, StackName: o.StackName,
		Region: o.Region, Parameters: o.Parameters, Logf: s.logf})
	if err != nil {
		return s, err
	}
	s.resources, s.Tables, s.Queues = res, res.Tables, res.Queues

	// Functions, each in its emulators.
	for _, id := range functions {
		spec, err := s.functionSpec(id)
		if err != nil {
			return s, fmt.Errorf("localstack: %w", err)
		}
		s.Specs[id] = spec
		for _, ig := range spec.Ignored {
			s.logf("%s: event %s is not emulated locally", id, ig)
		}
	}
	// Before the environments: they hold its URL.
	if err := s.startReceipts(); err != nil {
		return s, err
	}
	for _, id := range functions {
		spec := s.Specs[id]
		conc := spec.MaxConcurrency
		if o.MaxConcurrency > 0 {
			conc = o.MaxConcurrency
		}
		if conc > 1 {
			if err := managedInstancesSupported(); err != nil {
				return s, fmt.Errorf("localstack: %s with a maximum concurrency of %d: %w", id, conc, err)
			}
		}
		s.Functions[id] = NewFunction(FunctionConfig{
			Name:           id,
			RIE:            rie,
			Bootstrap:      bootstraps[id],
			Env:            s.environ(spec, bootstraps[id]),
			Timeout:        spec.Timeout,
			MaxInstances:   o.Instances,
			MaxConcurrency: conc,
			Output:         o.FunctionOutput,
		})
		s.Routes = append(s.Routes, spec.Routes...)
	}

	if len(s.Routes) > 0 {
		if err := s.serveAPI(); err != nil {
			return s, err
		}
	}

	pollCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	s.pollStop = cancel
	for _, id := range functions {
		for _, src := range s.Specs[id].SQS {
			q := s.queueByARN(src.QueueARN)
			if q == nil {
				return s, fmt.Errorf("localstack: %s: event %s: queue %s is not one of the template's", id, src.Event, src.QueueARN)
			}
			if !src.Enabled {
				s.logf("%s: event %s is disabled in the template: not polling %s", id, src.Event, q.Name)
				continue
			}
			// As many batches at once as the environments take.
			conc := o.Instances * s.Functions[id].MaxConcurrency
			if src.MaximumConcurrency > 0 {
				conc = min(conc, src.MaximumConcurrency)
			}
			poller := &Poller{Source: src, Queue: q, Client: s.sqs, Invoker: s, Region: o.Region,
				Concurrency: conc, RetryDelay: o.RetryDelay, WaitTime: o.PollWait, Logf: s.accessf}
			s.Pollers = append(s.Pollers, poller)
			s.pollWG.Go(func() { poller.Run(pollCtx) })
		}
		for _, src := range s.Specs[id].Streams {
			poller, err := s.streamPoller(src)
			if err != nil {
				return s, fmt.Errorf("localstack: %s: event %s: %w", id, src.Event, err)
			}
			if poller == nil {
				s.logf("%s: event %s is disabled in the template: not reading %s", id, src.Event, src.StreamARN)
				continue
			}
			s.StreamPollers = append(s.StreamPollers, poller)
			s.pollWG.Go(func() { poller.Run(pollCtx) })
		}
	}
	return s, nil
}

func sweepText(d time.Duration) string {
	if d <= 0 {
		return "off"
	}
	return "every " + d.String()
}

func (s *Stack) serveAPI() error {
	l, err := net.Listen("tcp", s.Options.APIAddr)
	if err != nil {
		return fmt.Errorf("localstack: serve the HTTP API on %s (Options.APIAddr): %w", s.Options.APIAddr, err)
	}
	sort.SliceStable(s.Routes, func(i, j int) bool { return s.Routes[i].Key() < s.Routes[j].Key() })
	api := &HTTPAPI{Routes: s.Routes, Invoker: s, AccountID: AccountID, Logf: s.accessf}
	s.api = &http.Server{Handler: api, ReadHeaderTimeout: 10 * time.Second}
	s.APIURL = "http://" + l.Addr().String()
	go func() { _ = s.api.Serve(l) }()
	return nil
}

// Invoke invokes a function of the stack by logical id.
func (s *Stack) Invoke(ctx context.Context, function string, payload []byte) ([]byte, error) {
	f, ok := s.Functions[function]
	if !ok {
		return nil, fmt.Errorf("localstack: no function %s", function)
	}
	return f.Invoke(ctx, payload)
}

// DynamoDB returns a client of the stack's DynamoDB endpoint.
func (s *Stack) DynamoDB() *dynamodb.Client { return s.ddb }

// SQS returns a client of the stack's SQS endpoint, or nil when the
// template has no queue.
func (s *Stack) SQS() *sqs.Client { return s.sqs }

// PIDs are the process ids of everything the stack started and is running:
// the local servers and every emulator.
func (s *Stack) PIDs() []int {
	var pids []int
	if s.dynamo != nil {
		pids = append(pids, s.dynamo.PID())
	}
	if s.sqsSrv != nil {
		pids = append(pids, s.sqsSrv.PID())
	}
	for _, f := range s.Functions {
		pids = append(pids, f.PIDs()...)
	}
	slices.Sort(pids)
	return pids
}

// Stop stops, in order, the pollers (after their batches in flight), the
// HTTP API (after its requests in flight), the functions' emulators, the
// receipts service (in this process) and the local servers, the processes
// each by its id. It is safe to call more than once.
func (s *Stack) Stop() {
	s.stopOnce.Do(func() {
		if s.pollStop != nil {
			s.pollStop()
			s.pollWG.Wait()
		}
		if s.api != nil {
			ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
			_ = s.api.Shutdown(ctx)
			cancel()
		}
		var wg sync.WaitGroup
		for _, f := range s.Functions {
			wg.Go(f.Stop)
		}
		wg.Wait()
		if s.Receipts != nil {
			_ = s.Receipts.Close()
		}
		if s.Traces != nil {
			s.Traces.Stop()
		}
		if s.dynamo != nil {
			_ = s.dynamo.Stop()
		}
		if s.sqsSrv != nil {
			_ = s.sqsSrv.Stop()
		}
	})
}

func (s *Stack) logf(format string, args ...any) { s.printf(s.Options.Log, format, args...) }

func (s *Stack) progressf(format string, args ...any) {
	s.printf(s.Options.ProgressLog, format, args...)
}

func (s *Stack) accessf(format string, args ...any) { s.printf(s.Options.AccessLog, format, args...) }

func (s *Stack) printf(w io.Writer, format string, args ...any) {
	line := fmt.Sprintf(format, args...)
	if !strings.HasSuffix(line, "\n") {
		line += "\n"
	}
	outputMu.Lock()
	fmt.Fprint(w, "localstack: "+line)
	outputMu.Unlock()
}
