package localstack

import (
	"context"
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/idemkit/kit/idem/idemtest"
)

// The repository's template with UseManagedInstances runs the Managed
// twins, each environment taking the template's
// PerExecutionEnvironmentMaxConcurrency invokes at once and its pollers as
// many batches; Options.MaxConcurrency puts every function there.
func TestStackManagedInstances(t *testing.T) {
	if runtime.GOOS != "linux" || os.Geteuid() != 0 {
		t.Skip("the emulator's managed-instances mode runs on Linux, as root (managedInstancesCommand)")
	}
	tmpl, err := ReadTemplate("../../../../template.yaml")
	if err != nil {
		t.Fatal(err)
	}
	echo := map[string]string{}
	for _, id := range tmpl.OfType(typeFunction) {
		echo[id] = testEcho(t)
	}
	want, _ := number(tmpl.Parameters["ManagedInstancesMaxConcurrency"].Default)
	for _, tc := range []struct {
		name   string
		params map[string]string
		conc   int
		// want is each function's concurrency; a function not named
		// does not run.
		want map[string]int
	}{
		{"template", map[string]string{"UseManagedInstances": "true"}, 0,
			map[string]int{"ManagedQueueFunction": int(want), "ManagedWebhookFunction": int(want), "LedgerFunction": 1, "RelayFunction": 1}},
		{"every function", nil, 3,
			map[string]int{"QueueFunction": 3, "WebhookFunction": 3, "LedgerFunction": 3, "RelayFunction": 3}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out syncBuffer
			stack, err := Start(context.Background(), func(o *Options) {
				o.Template = "../../../../template.yaml"
				o.StackName = "managed-" + strconv.Itoa(tc.conc)
				o.Parameters = tc.params
				o.MaxConcurrency = tc.conc
				o.APIAddr = "127.0.0.1:0"
				o.DynamoDBEndpoint = idemtest.Endpoint(t)
				o.SQSEndpoint = testSQS(t)
				o.BuildDir = filepath.Join(shared.dir, "managed")
				o.RIE = testRIE(t)
				o.Bootstraps = echo
				o.NoReceipts = true
				o.PollWait = time.Second
				o.Log = &out
			})
			if err != nil {
				t.Fatalf("start: %v\n%s", err, out.String())
			}
			t.Cleanup(func() {
				stack.Stop()
				if t.Failed() {
					t.Logf("stack output:\n%s", out.String())
				}
			})
			got := map[string]int{}
			for id, f := range stack.Functions {
				got[id] = f.MaxConcurrency
			}
			if !maps.Equal(got, tc.want) {
				t.Errorf("expect the functions and their concurrency %v, got %v", tc.want, got)
			}
			for _, p := range stack.Pollers {
				conc := min(stack.Options.Instances*tc.want[p.Source.Function], p.Source.MaximumConcurrency)
				if p.Concurrency != conc {
					t.Errorf("poller %s.%s: expect %d batches at once, got %d", p.Source.Function, p.Source.Event, conc, p.Concurrency)
				}
			}
			for id, conc := range tc.want {
				b, err := stack.Invoke(context.Background(), id, []byte(`{"env":"AWS_LAMBDA_MAX_CONCURRENCY"}`))
				var r echoResponse
				if err != nil || json.Unmarshal(b, &r) != nil {
					t.Fatalf("invoke %s: %s, %v", id, b, err)
				}
				if wantEnv := strconv.Itoa(conc); conc > 1 && r.Env != wantEnv || conc == 1 && r.Env != "" {
					t.Errorf("%s: expect AWS_LAMBDA_MAX_CONCURRENCY %q, got %q", id, wantEnv, r.Env)
				}
			}
		})
	}
}
