package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/idemkit/kit/idem/cmd/internal/localstack"
	"github.com/idemkit/kit/idem/idemtest"
)

// Local secret values, used when the environment sets none; the template
// names the deployed ones in SSM or Secrets Manager.
var defaultSecrets = map[string]string{
	"WEBHOOK_SECRET":        "local-webhook-secret",
	"STRIPE_WEBHOOK_SECRET": "whsec_local_test",
}

type kv map[string]string

func (m kv) String() string { return fmt.Sprint(map[string]string(m)) }
func (m kv) Set(s string) error {
	k, v, ok := strings.Cut(s, "=")
	if !ok || k == "" {
		return fmt.Errorf("want KEY=VALUE, got %q", s)
	}
	m[k] = v
	return nil
}

func main() {
	if len(os.Args) > 1 && os.Args[1] == "send" {
		if err := send(os.Args[2:]); err != nil {
			fmt.Fprintln(os.Stderr, "idem-local send:", err)
			os.Exit(1)
		}
		return
	}
	params, bootstraps := kv{}, kv{}
	var (
		template   = flag.String("template", "template.yaml", "the SAM template")
		stackName  = flag.String("stack-name", "idem-local", "prefix of the local table and queue names")
		apiAddr    = flag.String("api-addr", "127.0.0.1:3000", "where the HttpApi routes are served (port 0: any free port)")
		rcptAddr   = flag.String("receipts-addr", "127.0.0.1:3002", "where the receipts service the functions call (RECEIPTS_URL) listens, a loopback address (port 0: any free port)")
		noReceipts = flag.Bool("no-receipts", false, "run no receipts service: the functions keep the template's RECEIPTS_URL (empty: they call out to none)")
		instances  = flag.Int("instances", 2, "execution environments (emulator processes) per function, at most")
		maxConc    = flag.Int("max-concurrency", 0, "run every function as on Lambda Managed Instances, each environment taking up to this many invokes at once (AWS_LAMBDA_MAX_CONCURRENCY; Linux, as root); 0: as the template says (-param UseManagedInstances=true)")
		ttlSweep   = flag.Duration("ttl-sweep", 10*time.Second, "how often the local DynamoDB deletes expired claims (0: never)")
		retryDelay = flag.Duration("retry-delay", time.Second, "how long a failed SQS record stays invisible before its next receive (negative: the queue's VisibilityTimeout, as in Lambda)")
		demo       = flag.Bool("demo", false, "replay the events directory, each message delivered -deliveries times (some at once), print the balances and the receipts, and exit")
		eventsDir  = flag.String("events", "events", "the events the demo replays")
		deliveries = flag.Int("deliveries", 3, "how many times the demo delivers each message")
		buildDir   = flag.String("build-dir", "bin/local", "where the functions and the emulator are built, and the running stack's stack.json is written")
		tracesAddr = flag.String("traces-addr", "127.0.0.1:4318", "where the functions' spans are received (their OTEL_EXPORTER_OTLP_ENDPOINT), a loopback address; GET /traces there lists the traces, /traces/<id> shows one; empty: the functions export none")
		quiet      = flag.Bool("quiet", false, "hide the functions' output, the per-request lines and the line as each build starts")
	)
	flag.Var(params, "param", "a template parameter override, `Name=Value` (repeatable)")
	flag.Var(bootstraps, "bootstrap", "run a prebuilt bootstrap for a function, `LogicalId=path` (repeatable)")
	flag.Parse()
	if flag.NArg() > 0 {
		// A mistyped subcommand would otherwise start a second stack.
		fmt.Fprintf(os.Stderr, "idem-local: unexpected argument %q: the one subcommand is send (idem-local send -h), and flags come before any argument\n", flag.Arg(0))
		os.Exit(2)
	}

	// os.Exit skips deferred calls: everything started is stopped
	// explicitly below.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	secrets := map[string]string{}
	for name, def := range defaultSecrets {
		if v := os.Getenv(name); v != "" {
			secrets[name] = v
		} else {
			secrets[name] = def
		}
	}
	var fnOut, accessLog, progress io.Writer = os.Stdout, os.Stderr, os.Stderr
	if *quiet {
		fnOut, accessLog, progress = io.Discard, io.Discard, io.Discard
	}
	begin := time.Now()
	fmt.Fprintln(os.Stderr, "idem-local: building the functions and starting the local servers…")
	stack, err := localstack.Start(ctx, func(o *localstack.Options) {
		o.Template = *template
		o.StackName = *stackName
		o.APIAddr = *apiAddr
		o.ReceiptsAddr = *rcptAddr
		o.NoReceipts = *noReceipts
		o.Instances = *instances
		o.MaxConcurrency = *maxConc
		o.TTLSweepInterval = *ttlSweep
		o.RetryDelay = *retryDelay
		o.Parameters = params
		o.Bootstraps = bootstraps
		o.Secrets = secrets
		o.Log = os.Stderr
		o.ProgressLog = progress
		o.FunctionOutput = fnOut
		o.AccessLog = accessLog
		o.BuildDir = *buildDir
		o.Traces = *tracesAddr != ""
		o.TracesAddr = *tracesAddr
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "idem-local:", err)
		os.Exit(1)
	}
	statePath := filepath.Join(stack.Options.BuildDir, "stack.json")
	if err := writeState(statePath, stack); err != nil {
		fmt.Fprintln(os.Stderr, "idem-local: write", statePath+":", err)
	}

	printBanner(os.Stdout, stack, secrets, time.Since(begin))

	code := 0
	if *demo {
		if err := runDemo(ctx, os.Stdout, stack, secrets, *eventsDir, *deliveries); err != nil {
			fmt.Fprintln(os.Stderr, "idem-local: demo:", err)
			code = 1
		}
	} else {
		<-ctx.Done()
		stop() // a second Ctrl-C ends the command at once
		fmt.Fprintln(os.Stderr, "\nidem-local: stopping… (Ctrl-C again to quit now)")
	}
	pids := stack.PIDs()
	stack.Stop()
	_ = os.Remove(statePath)
	fmt.Fprintf(os.Stderr, "idem-local: stopped (processes %v)\n", pids)
	os.Exit(code)
}

func printBanner(w io.Writer, s *localstack.Stack, secrets map[string]string, took time.Duration) {
	fmt.Fprintf(w, "\nidem-local: %s running (started in %v)\n", s.Options.Template, took.Round(100*time.Millisecond))
	fmt.Fprintf(w, "  DynamoDB   %s\n", s.DynamoDBEndpoint)
	if s.SQSEndpoint != "" {
		fmt.Fprintf(w, "  SQS        %s\n", s.SQSEndpoint)
	}
	for _, id := range sortedKeys(s.Tables) {
		t := s.Tables[id]
		var extra []string
		if t.TTLAttribute != "" {
			extra = append(extra, "TTL on "+t.TTLAttribute)
		}
		if t.StreamARN != "" {
			extra = append(extra, "stream "+t.StreamViewType)
		}
		line := fmt.Sprintf("  table      %-28s %s", id, t.Name)
		if len(extra) > 0 {
			line += " (" + strings.Join(extra, ", ") + ")"
		}
		fmt.Fprintln(w, line)
	}
	for _, id := range sortedKeys(s.Queues) {
		q := s.Queues[id]
		extra := ""
		if n := q.MaxReceiveCount(); n > 0 {
			extra = fmt.Sprintf(" (to its dead-letter queue after %d receives)", n)
		}
		fmt.Fprintf(w, "  queue      %-28s %s%s\n", id, q.URL, extra)
	}
	for _, id := range sortedKeys(s.Functions) {
		spec, f := s.Specs[id], s.Functions[id]
		mode := ""
		if f.MaxConcurrency > 1 {
			mode = fmt.Sprintf(", managed-instances mode: %d invokes at once in each", f.MaxConcurrency)
		}
		fmt.Fprintf(w, "  function   %-28s up to %d environments%s, timeout %v\n", id, s.Options.Instances, mode, spec.Timeout)
	}
	if s.Traces != nil {
		fmt.Fprintf(w, "  traces     %-28s %s (the functions' OTEL_EXPORTER_OTLP_ENDPOINT); GET %s/traces lists them, /traces/<id> shows one\n", "OTLP/HTTP", s.Traces.URL, s.Traces.URL)
	}
	if s.Receipts != nil {
		fmt.Fprintf(w, "  receipts   %-28s %s (admin %s: fail, hang, drop, latency, calls, stats, reset)\n", "RECEIPTS_URL", s.Receipts.URL(), s.Receipts.AdminURL())
	}
	for _, r := range s.Routes {
		fmt.Fprintf(w, "  route      %-28s %s%s → %s\n", r.Key(), s.APIURL, r.Path, r.Function)
	}
	for _, p := range s.Pollers {
		fmt.Fprintf(w, "  poller     %-28s %s → %s (batch %d, %d at once)\n", p.Source.Function+"."+p.Source.Event, p.Queue.Name, p.Source.Function, p.Source.BatchSize, p.Concurrency)
	}
	for _, p := range s.StreamPollers {
		src := p.Source
		extra := fmt.Sprintf("batch %d, from %s", src.BatchSize, src.StartingPosition)
		if n := len(src.Filters); n > 0 {
			extra += fmt.Sprintf(", %d filter(s)", n)
		}
		if src.BisectBatchOnFunctionError {
			extra += ", bisect on error"
		}
		retries := fmt.Sprintf("retries until expiry (locally %d)", p.MaxRetries())
		if src.MaximumRetryAttempts >= 0 {
			retries = fmt.Sprintf("%d retries", src.MaximumRetryAttempts)
		}
		extra += ", " + retries
		if p.OnFailure != nil {
			extra += " then on-failure to " + p.OnFailure.Name
		}
		fmt.Fprintf(w, "  stream     %-28s %s's stream → %s (%s)\n", src.Function+"."+src.Event, p.Table.Name, src.Function, extra)
	}
	for _, name := range sortedKeys(secrets) {
		fmt.Fprintf(w, "  secret     %-28s %q (set %s to change it)\n", name, secrets[name], name)
	}

	// The webhook route and the queue are two senders, two scopes of keys:
	// one id sent both ways is two credits. Each gets an id of its own.
	body := `{"id":"evt_001","account":"acc-9","cents":500}`
	fmt.Fprintf(w, "\nSend a credit over HTTP (repeat it: the balance moves once):\n")
	for _, r := range s.Routes {
		if r.Path != "/webhooks/credits" {
			continue
		}
		sig := ""
		if secret := secrets["WEBHOOK_SECRET"]; secret != "" {
			sig = fmt.Sprintf(" \\\n    -H 'X-Signature: %s'", idemtest.HMACSignature(secret, []byte(body)))
		}
		fmt.Fprintf(w, "  curl -i %s%s -H 'Idempotency-Key: evt_001'%s \\\n    -d '%s'\n", s.APIURL, r.Path, sig, body)
		if secret := secrets["WEBHOOK_SECRET"]; secret != "" {
			fmt.Fprintf(w, "  (sign another body: printf %%s \"$BODY\" | openssl dgst -sha256 -hmac '%s' | sed 's/^.* /sha256=/')\n", secret)
		}
	}
	if p := entryPoller(s); p != nil {
		body := `{"id":"evt_002","account":"acc-9","cents":250}`
		fmt.Fprintf(w, "Or through the queue, another sender with keys of its own (repeat it: the balance moves once):\n")
		// The local servers take any credentials, and the AWS CLI wants some.
		fmt.Fprintf(w, "  AWS_ACCESS_KEY_ID=local AWS_SECRET_ACCESS_KEY=local aws --endpoint-url %s --region %s sqs send-message --queue-url %s \\\n    --message-body '%s' \\\n    --message-attributes 'IdempotencyKey={DataType=String,StringValue=evt_002}'\n",
			s.SQSEndpoint, s.Options.Region, p.Queue.URL, body)
		fmt.Fprintf(w, "  bin/idem-local send -n 3 '%s'\n", body)
	}
	fmt.Fprintf(w, "  AWS_ACCESS_KEY_ID=local AWS_SECRET_ACCESS_KEY=local aws --endpoint-url %s --region %s dynamodb scan --table-name %s\n", s.DynamoDBEndpoint, s.Options.Region, firstTable(s, "AccountsTable"))
	if lines := idemLines(s); len(lines) > 0 {
		fmt.Fprintf(w, "\nThe claims and the dead-letter queue, with the operator's command (go doc ./idem/cmd/idem):\n")
		for _, l := range lines {
			fmt.Fprintf(w, "  %s\n", l)
		}
	}
	fmt.Fprintf(w, "\nCtrl-C stops everything.\n\n")
}

// idemLines are ready idem command lines for the running stack: make local
// builds bin/idem, and -local reads the state file writeState writes. None
// when the stack has no processed-ids table the entry queue's consumer
// names (PROCESSED_TABLE) or calls ProcessedTable.
func idemLines(s *localstack.Stack) []string {
	p := entryPoller(s)
	if p == nil {
		return nil
	}
	table := ""
	if spec := s.Specs[p.Source.Function]; spec != nil {
		table = spec.Env["PROCESSED_TABLE"]
	}
	if t, ok := s.Tables["ProcessedTable"]; table == "" && ok {
		table = t.Name
	}
	if table == "" {
		return nil
	}
	base := fmt.Sprintf("bin/idem -local %s -table %s", filepath.Join(s.Options.BuildDir, "stack.json"), table)
	lines := []string{base + " inspect -queue " + p.Queue.LogicalID + " -message-attribute IdempotencyKey=evt_002"}
	var pol struct {
		Target string `json:"deadLetterTargetArn"`
	}
	if json.Unmarshal([]byte(p.Queue.Attributes["RedrivePolicy"]), &pol) == nil {
		for _, id := range sortedKeys(s.Queues) {
			if q := s.Queues[id]; q.ARN == pol.Target || q.Name == pol.Target[strings.LastIndexByte(pol.Target, ':')+1:] {
				lines = append(lines, base+" dlq -queue "+id)
				break
			}
		}
	}
	return lines
}

// entryPoller is the poller of the queue senders use: a polled queue no
// function sends to. The others are links of a chain (the ledger queue,
// which the relay feeds from the outbox). Nil when nothing is polled.
func entryPoller(s *localstack.Stack) *localstack.Poller {
	fed := map[string]bool{}
	for _, spec := range s.Specs {
		for _, v := range spec.Env {
			fed[v] = true
		}
	}
	for _, p := range s.Pollers {
		if !fed[p.Queue.URL] && !fed[p.Queue.ARN] && !fed[p.Queue.Name] {
			return p
		}
	}
	if len(s.Pollers) > 0 {
		return s.Pollers[0]
	}
	return nil
}

func firstTable(s *localstack.Stack, prefer string) string {
	if t, ok := s.Tables[prefer]; ok {
		return t.Name
	}
	for _, id := range sortedKeys(s.Tables) {
		return s.Tables[id].Name
	}
	return ""
}

// state is what `idem-local send` needs to reach a running stack.
type state struct {
	Region           string            `json:"region"`
	DynamoDBEndpoint string            `json:"dynamodbEndpoint"`
	SQSEndpoint      string            `json:"sqsEndpoint"`
	APIURL           string            `json:"apiUrl"`
	ReceiptsURL      string            `json:"receiptsUrl,omitempty"`
	Queues           map[string]string `json:"queues"` // logical id → URL
	Polled           []string          `json:"polled"` // URLs of the queues a function consumes
	PIDs             []int             `json:"pids"`   // the processes the stack started
}

func writeState(path string, s *localstack.Stack) error {
	st := state{Region: s.Options.Region, DynamoDBEndpoint: s.DynamoDBEndpoint, SQSEndpoint: s.SQSEndpoint, APIURL: s.APIURL, Queues: map[string]string{}}
	if s.Receipts != nil {
		st.ReceiptsURL = s.Receipts.URL()
	}
	for id, q := range s.Queues {
		st.Queues[id] = q.URL
	}
	// The queue senders use first: `idem-local send` sends there.
	first := entryPoller(s)
	if first != nil {
		st.Polled = append(st.Polled, first.Queue.URL)
	}
	for _, p := range s.Pollers {
		if p != first {
			st.Polled = append(st.Polled, p.Queue.URL)
		}
	}
	st.PIDs = s.PIDs()
	b, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o644)
}

func readState(path string) (*state, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("no running stack (%s is missing): start one with make local", path)
	}
	if err != nil {
		return nil, err
	}
	var st state
	return &st, json.Unmarshal(b, &st)
}

func sortedKeys[V any](m map[string]V) []string {
	return slices.Sorted(maps.Keys(m))
}
