package localstack

import (
	"encoding/json"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestRepositoryTemplate checks what template.yaml promises beyond what
// cfn-lint knows: Lambda's advice on visibility, a retention longer than
// every redelivery, least privilege, and builds that sam build and make
// local can both run.
func TestRepositoryTemplate(t *testing.T) {
	tmpl, err := ReadTemplate("../../../template.yaml")
	if err != nil {
		t.Fatal(err)
	}
	makefile, err := os.ReadFile("../../../Makefile")
	if err != nil {
		t.Fatal(err)
	}
	queues := map[string]float64{} // logical id → MessageRetentionPeriod, seconds
	for _, id := range tmpl.OfType(typeQueue) {
		n, ok := number(tmpl.Resources[id].Properties["MessageRetentionPeriod"])
		if !ok {
			t.Errorf("%s: state MessageRetentionPeriod", id)
		}
		queues[id] = n
	}
	days, _ := number(tmpl.Parameters["RetentionDays"].Default)
	minDays := tmpl.Parameters["RetentionDays"].MinValue
	for id, secs := range queues {
		if days*86400 <= secs || minDays == nil || *minDays*86400 <= secs {
			t.Errorf("RetentionDays (default %v, MinValue %v) must exceed %s's retention of %v days", days, minDays, id, secs/86400)
		}
	}

	for _, id := range tmpl.OfType(typeFunction) {
		p := tmpl.FunctionProperties(id)
		if p["Runtime"] != "provided.al2023" || p["Handler"] != "bootstrap" || p["CodeUri"] != "." {
			t.Errorf("%s: want provided.al2023, Handler bootstrap, CodeUri ., got %v %v %v", id, p["Runtime"], p["Handler"], p["CodeUri"])
		}
		if a := listOf(p["Architectures"]); len(a) != 1 || a[0] != "arm64" {
			t.Errorf("%s: want Architectures [arm64], got %v", id, p["Architectures"])
		}
		if tmpl.Resources[id].Metadata["BuildMethod"] != "makefile" {
			t.Errorf("%s: want Metadata BuildMethod makefile", id)
		}
		target := regexp.MustCompile(`(?m)^build-` + id + `:\s*\n\t(?:.*\n\t)*.*\$\(ARTIFACTS_DIR\)/bootstrap`)
		if !target.Match(makefile) {
			t.Errorf("%s: the Makefile has no build-%s target writing $(ARTIFACTS_DIR)/bootstrap", id, id)
		}
		lf := mapOf(p["LoggingConfig"])
		if lf["LogFormat"] != "JSON" {
			t.Errorf("%s: want LoggingConfig LogFormat JSON", id)
		}
		// The kit's EMF lines carry no "level", which Lambda's JSON log
		// format reads as INFO: a filter above INFO drops them, and the
		// alarms built on them go quiet.
		if lvl, ok := lf["ApplicationLogLevel"].(string); !ok || !slices.Contains([]string{"TRACE", "DEBUG", "INFO"}, lvl) {
			t.Errorf("%s: want LoggingConfig ApplicationLogLevel TRACE, DEBUG or INFO (a literal), got %v: the EMF metrics are INFO lines", id, lf["ApplicationLogLevel"])
		}
		// The endpoint variable sam local's --env-vars overrides: declared,
		// and empty unless a parameter says otherwise, so that a deployed
		// function keeps AWS's endpoint.
		vars := mapOf(mapOf(p["Environment"])["Variables"])
		ref, _ := mapOf(vars["AWS_ENDPOINT_URL_DYNAMODB"])["Ref"].(string)
		if param, ok := tmpl.Parameters[ref]; !ok || param.Type != "String" || param.Default != "" {
			t.Errorf("%s: want AWS_ENDPOINT_URL_DYNAMODB: !Ref <a String parameter with Default \"\">, got %v (parameter %+v)", id, vars["AWS_ENDPOINT_URL_DYNAMODB"], tmpl.Parameters[ref])
		}
		timeout, _ := number(p["Timeout"])
		for name, e := range mapOf(p["Events"]) {
			em := mapOf(e)
			if em["Type"] != "SQS" {
				continue
			}
			props := mapOf(em["Properties"])
			if !slices.Contains(listOf(props["FunctionResponseTypes"]), any("ReportBatchItemFailures")) {
				t.Errorf("%s.%s: want FunctionResponseTypes [ReportBatchItemFailures]", id, name)
			}
			if _, ok := number(mapOf(props["ScalingConfig"])["MaximumConcurrency"]); !ok {
				t.Errorf("%s.%s: want ScalingConfig MaximumConcurrency", id, name)
			}
			q := mapOf(props["Queue"])["Fn::GetAtt"]
			qid, _ := listOf(q)[0].(string)
			vis, _ := number(tmpl.Resources[qid].Properties["VisibilityTimeout"])
			if vis < 6*timeout {
				t.Errorf("%s's VisibilityTimeout %vs must be at least 6 × %s's Timeout %vs", qid, vis, id, timeout)
			}
			if _, ok := tmpl.Resources[qid].Properties["RedrivePolicy"]; !ok {
				t.Errorf("%s: want a RedrivePolicy to a dead-letter queue", qid)
			}
		}
	}

	// Least privilege: no statement grants "*" or a service wildcard.
	for _, id := range tmpl.OfType("AWS::IAM::Role") {
		walkStatements(tmpl.Resources[id].Properties["Policies"], func(st map[string]any) {
			for _, k := range []string{"Action", "Resource"} {
				for _, v := range append(listOf(st[k]), st[k]) {
					if s, ok := v.(string); ok && (s == "*" || strings.HasSuffix(s, ":*")) {
						t.Errorf("%s: a statement's %s is %q", id, k, s)
					}
				}
			}
		})
	}
	// A function that calls a receipts service runs under the lease, which
	// takes and releases its claim with UpdateItem on the claims table.
	for _, id := range tmpl.OfType(typeFunction) {
		getAtt := func(v any) string {
			l := listOf(mapOf(v)["Fn::GetAtt"])
			if len(l) == 0 {
				return ""
			}
			s, _ := l[0].(string)
			return s
		}
		rid := getAtt(tmpl.Resources[id].Properties["Role"])
		granted := false
		walkStatements(tmpl.Resources[rid].Properties["Policies"], func(st map[string]any) {
			if getAtt(st["Resource"]) == "ProcessedTable" && slices.Contains(listOf(st["Action"]), any("dynamodb:UpdateItem")) {
				granted = true
			}
		})
		if !granted {
			t.Errorf("%s: its role %s grants no dynamodb:UpdateItem on ProcessedTable, which the lease needs when RECEIPTS_URL is set", id, rid)
		}
	}
	for _, id := range tmpl.OfType(typeFunction) {
		if _, ok := tmpl.Resources[id].Properties["Policies"]; ok {
			t.Errorf("%s: SAM Policies would come with SAM's default role; give it its own Role", id)
		}
	}
}

// TestEnvVarsFile checks events/env.json, sam local's --env-vars file,
// against the template: sam local overrides only the variables a function
// declares and drops any other name without a word, so each name must be
// declared (a global one by some function), and it must point the
// functions at DynamoDB Local with the README's table names.
func TestEnvVarsFile(t *testing.T) {
	tmpl, err := ReadTemplate("../../../template.yaml")
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile("../../../events/env.json")
	if err != nil {
		t.Fatal(err)
	}
	var file map[string]map[string]string
	if err := json.Unmarshal(b, &file); err != nil {
		t.Fatalf("events/env.json: %v", err)
	}
	declared := map[string]map[string]bool{} // function → variable names
	for _, id := range tmpl.OfType(typeFunction) {
		declared[id] = map[string]bool{}
		for name := range mapOf(mapOf(tmpl.FunctionProperties(id)["Environment"])["Variables"]) {
			declared[id][name] = true
		}
	}
	for section, vars := range file {
		for name := range vars {
			if section != "Parameters" {
				if _, ok := declared[section]; !ok {
					t.Errorf("events/env.json: %s is no function of the template", section)
				} else if !declared[section][name] {
					t.Errorf("events/env.json: %s.%s is not declared by %s: sam local would ignore it", section, name, section)
				}
				continue
			}
			var found bool
			for _, names := range declared {
				found = found || names[name]
			}
			if !found {
				t.Errorf("events/env.json: Parameters.%s is declared by no function: sam local would ignore it", name)
			}
		}
	}
	for name, want := range map[string]string{
		"AWS_ENDPOINT_URL_DYNAMODB": "http://127.0.0.1:8000",
		"PROCESSED_TABLE":           "idem-local-ProcessedTable",
		"ACCOUNTS_TABLE":            "idem-local-AccountsTable",
	} {
		if got := file["Parameters"][name]; got != want {
			t.Errorf("events/env.json: Parameters.%s: expect %q, got %q", name, want, got)
		}
	}
}

func walkStatements(v any, fn func(map[string]any)) {
	switch x := v.(type) {
	case map[string]any:
		if _, ok := x["Effect"]; ok {
			fn(x)
			return
		}
		for _, e := range x {
			walkStatements(e, fn)
		}
	case []any:
		for _, e := range x {
			walkStatements(e, fn)
		}
	}
}

// TestTemplateTranslates runs the SAM transform on the template, as
// CloudFormation will, and checks what comes out. (make lint-template runs
// the transform and cfn-lint, and installs both when missing.)
func TestTemplateTranslates(t *testing.T) {
	python := os.Getenv("IDEM_PYTHON")
	if python == "" {
		python = "python3"
	}
	if err := exec.Command(python, "-c", "import samtranslator").Run(); err != nil {
		t.Skipf("aws-sam-translator is not installed for %s (make lint-template installs it): %v", python, err)
	}
	cmd := exec.Command(python, "../../../.ci/sam_translate.py", "../../../template.yaml")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("SAM transform: %v\n%s", err, stderr.String())
	}
	var cfn struct {
		Resources map[string]struct {
			Type       string         `json:"Type"`
			Properties map[string]any `json:"Properties"`
		} `json:"Resources"`
	}
	if err := json.Unmarshal(out, &cfn); err != nil {
		t.Fatal(err)
	}
	kinds := map[string]int{}
	for _, r := range cfn.Resources {
		kinds[r.Type]++
		if r.Type == "AWS::IAM::Role" {
			if _, ok := r.Properties["ManagedPolicyArns"]; ok {
				t.Errorf("the transform attached managed policies to a role: %v", r.Properties["ManagedPolicyArns"])
			}
		}
	}
	for kind, n := range map[string]int{"AWS::Lambda::Function": 2, "AWS::Lambda::EventSourceMapping": 1, "AWS::ApiGatewayV2::Api": 1, "AWS::Lambda::Permission": 2} {
		if kinds[kind] != n {
			t.Errorf("expect %d %s after the transform, got %d", n, kind, kinds[kind])
		}
	}
}
