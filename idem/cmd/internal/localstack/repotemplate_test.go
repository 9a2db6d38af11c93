package localstack

import (
	"encoding/json"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/idemkit/kit/idem/outbox"
)

// TestRepositoryTemplate checks what template.yaml promises beyond what
// cfn-lint knows: Lambda's advice on visibility, a retention longer than
// every redelivery, least privilege, and builds that sam build and make
// local can both run.
func TestRepositoryTemplate(t *testing.T) {
	tmpl, err := ReadTemplate("../../../../template.yaml")
	if err != nil {
		t.Fatal(err)
	}
	makefile, err := os.ReadFile("../../../../Makefile")
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
		// A rule may build several functions: build-A build-B: …
		target := regexp.MustCompile(`(?m)^(?:build-\S+ +)*build-` + id + `(?: +build-\S+)*:\s*\n\t(?:.*\n\t)*.*\$\((?:abspath \$\()?ARTIFACTS_DIR\)\)?/bootstrap`)
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

	// Least privilege: no statement grants "*" or a service wildcard, but
	// on EC2's Describe actions, which take no resource (the capacity
	// provider's operator role, as AWS documents it).
	for _, id := range tmpl.OfType("AWS::IAM::Role") {
		walkStatements(tmpl.Resources[id].Properties["Policies"], func(st map[string]any) {
			describes := true
			for _, a := range append(listOf(st["Action"]), st["Action"]) {
				if s, ok := a.(string); ok && !strings.HasPrefix(s, "ec2:Describe") {
					describes = false
				}
			}
			for _, k := range []string{"Action", "Resource"} {
				for _, v := range append(listOf(st[k]), st[k]) {
					s, ok := v.(string)
					if ok && (s == "*" && !(k == "Resource" && describes) || strings.HasSuffix(s, ":*")) {
						t.Errorf("%s: a statement's %s is %q", id, k, s)
					}
				}
			}
		})
	}
	// A function that applies credits (UpdateItem on AccountsTable) and so
	// may call a receipts service runs under the lease, which takes and
	// releases its claim with UpdateItem on the claims table.
	for _, id := range tmpl.OfType(typeFunction) {
		rid, _ := getAtt(tmpl.Resources[id].Properties["Role"])
		granted, credits := false, false
		walkStatements(tmpl.Resources[rid].Properties["Policies"], func(st map[string]any) {
			table, _ := getAtt(st["Resource"])
			if slices.Contains(listOf(st["Action"]), any("dynamodb:UpdateItem")) {
				granted = granted || table == "ProcessedTable"
				credits = credits || table == "AccountsTable"
			}
		})
		if credits && !granted {
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
// functions at DynamoDB Local with the table names make local uses (as
// idem-local's doc tells a sam local user).
func TestEnvVarsFile(t *testing.T) {
	tmpl, err := ReadTemplate("../../../../template.yaml")
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile("../../../../events/env.json")
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

// TestRepositoryTemplateOutbox checks the outbox's path through the
// template: the claims table's stream, the relay's event source mapping
// (Lambda's advice for streams, and the kit's filter), its role scoped to
// that stream and its destinations, and each queue a function announces
// on (LEDGER_QUEUE_URL) relayed and consumed.
func TestRepositoryTemplateOutbox(t *testing.T) {
	tmpl, err := ReadTemplate("../../../../template.yaml")
	if err != nil {
		t.Fatal(err)
	}
	sends := map[string]bool{} // queues a stream function's role may send to
	var relays []string
	for _, id := range tmpl.OfType(typeFunction) {
		p := tmpl.FunctionProperties(id)
		rid, _ := getAtt(p["Role"])
		for name, e := range mapOf(p["Events"]) {
			em := mapOf(e)
			if em["Type"] != "DynamoDB" {
				continue
			}
			relays = append(relays, id)
			props := mapOf(em["Properties"])
			where := id + "." + name
			table, attr := getAtt(props["Stream"])
			if attr != "StreamArn" || tmpl.Resources[table].Type != typeTable {
				t.Fatalf("%s: want Stream: !GetAtt <table>.StreamArn, got %v", where, props["Stream"])
			}
			if v := mapOf(tmpl.Resources[table].Properties["StreamSpecification"])["StreamViewType"]; v != "NEW_IMAGE" && v != "NEW_AND_OLD_IMAGES" {
				t.Errorf("%s: want a StreamViewType with the new image, which the relay sends, got %v", table, v)
			}
			if props["StartingPosition"] != "TRIM_HORIZON" {
				t.Errorf("%s: want StartingPosition TRIM_HORIZON, so that no item written before the mapping is missed, got %v", where, props["StartingPosition"])
			}
			if !slices.Contains(listOf(props["FunctionResponseTypes"]), any("ReportBatchItemFailures")) {
				t.Errorf("%s: want FunctionResponseTypes [ReportBatchItemFailures]: the relay answers with the first record not sent", where)
			}
			if !isTrue(props["BisectBatchOnFunctionError"]) {
				t.Errorf("%s: want BisectBatchOnFunctionError true", where)
			}
			if n, ok := number(props["MaximumRetryAttempts"]); !ok || n < 0 {
				t.Errorf("%s: want a finite MaximumRetryAttempts, so that one record cannot hold its shard for 24 hours, got %v", where, props["MaximumRetryAttempts"])
			}
			if n, ok := number(props["MaximumRecordAgeInSeconds"]); !ok || n < 60 || n > 86400 {
				t.Errorf("%s: want MaximumRecordAgeInSeconds from 60 to 86400 (the stream's 24 hours), got %v", where, props["MaximumRecordAgeInSeconds"])
			}
			filters := listOf(mapOf(props["FilterCriteria"])["Filters"])
			if len(filters) != 1 || mapOf(filters[0])["Pattern"] != outbox.FilterPattern {
				t.Errorf("%s: want FilterCriteria with the one pattern outbox.FilterPattern %s, got %v", where, outbox.FilterPattern, filters)
			}
			dest, _ := getAtt(mapOf(mapOf(props["DestinationConfig"])["OnFailure"])["Destination"])
			if tmpl.Resources[dest].Type != typeQueue {
				t.Errorf("%s: want DestinationConfig OnFailure Destination: !GetAtt <queue>.Arn, got %v", where, props["DestinationConfig"])
			}

			// The role: the stream's four reads on that stream only, and
			// no other DynamoDB action.
			reads := map[string]bool{}
			walkStatements(tmpl.Resources[rid].Properties["Policies"], func(st map[string]any) {
				res, resAttr := getAtt(st["Resource"])
				for _, a := range listOf(st["Action"]) {
					action, _ := a.(string)
					switch {
					case strings.HasPrefix(action, "dynamodb:"):
						if res != table || resAttr != "StreamArn" {
							t.Errorf("%s: %s on %v: want only the stream %s.StreamArn", rid, action, st["Resource"], table)
						}
						reads[action] = true
					case action == "sqs:SendMessage" && resAttr == "Arn":
						sends[res] = true
					}
				}
			})
			for _, a := range []string{"dynamodb:DescribeStream", "dynamodb:GetRecords", "dynamodb:GetShardIterator", "dynamodb:ListStreams"} {
				if !reads[a] {
					t.Errorf("%s: want %s on %s.StreamArn, which the event source mapping needs", rid, a, table)
				}
			}
			if !sends[dest] {
				t.Errorf("%s: want sqs:SendMessage on %s, the on-failure destination, which Lambda sends to with the function's role", rid, dest)
			}
			if len(reads) != 4 {
				t.Errorf("%s: want the four stream reads and no other DynamoDB action, got %v", rid, reads)
			}
		}
	}
	if len(relays) == 0 {
		t.Fatal("no function reads a DynamoDB stream: the outbox has no relay")
	}
	consumed := map[string]bool{}
	for _, id := range tmpl.OfType(typeFunction) {
		for _, e := range mapOf(tmpl.FunctionProperties(id)["Events"]) {
			if q, _ := getAtt(mapOf(mapOf(e)["Properties"])["Queue"]); mapOf(e)["Type"] == "SQS" {
				consumed[q] = true
			}
		}
	}
	announcers := 0
	for _, id := range tmpl.OfType(typeFunction) {
		v, ok := mapOf(mapOf(tmpl.FunctionProperties(id)["Environment"])["Variables"])["LEDGER_QUEUE_URL"]
		if !ok {
			continue
		}
		announcers++
		q, _ := mapOf(v)["Ref"].(string)
		if tmpl.Resources[q].Type != typeQueue {
			t.Errorf("%s: want LEDGER_QUEUE_URL: !Ref <queue> (its URL), got %v", id, v)
			continue
		}
		if !sends[q] {
			t.Errorf("%s announces on %s, which no relay's role may send to", id, q)
		}
		if !consumed[q] {
			t.Errorf("%s announces on %s, which no function consumes", id, q)
		}
	}
	if announcers == 0 {
		t.Error("no function declares LEDGER_QUEUE_URL")
	}
}

// getAtt reads !GetAtt Resource.Attr.
func getAtt(v any) (resource, attr string) {
	l := listOf(mapOf(v)["Fn::GetAtt"])
	if len(l) == 1 { // the long form's "Resource.Attr"
		s, _ := l[0].(string)
		resource, attr, _ = strings.Cut(s, ".")
		return resource, attr
	}
	if len(l) == 2 {
		resource, _ = l[0].(string)
		attr, _ = l[1].(string)
	}
	return resource, attr
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
	cmd := exec.Command(python, "../../../../.ci/sam_translate.py", "../../../../template.yaml")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("SAM transform: %v\n%s", err, stderr.String())
	}
	checkTranslated(t, out, "UseManagedInstances", map[string]int{"AWS::Lambda::Function": 4, "AWS::Lambda::EventSourceMapping": 3,
		"AWS::ApiGatewayV2::Api": 1, "AWS::Lambda::Permission": 2, "AWS::Lambda::CapacityProvider": 0})
}

// checkTranslated checks the transform's output: no managed policy on any
// role, and, leaving out the resources under the condition off (false in
// the parameters translated), n resources of each kind.
func checkTranslated(t *testing.T, out []byte, off string, n map[string]int) {
	t.Helper()
	var cfn struct {
		Resources map[string]struct {
			Type       string         `json:"Type"`
			Condition  string         `json:"Condition"`
			Properties map[string]any `json:"Properties"`
		} `json:"Resources"`
	}
	if err := json.Unmarshal(out, &cfn); err != nil {
		t.Fatal(err)
	}
	kinds := map[string]int{}
	for _, r := range cfn.Resources {
		if r.Type == "AWS::IAM::Role" {
			if _, ok := r.Properties["ManagedPolicyArns"]; ok {
				t.Errorf("the transform attached managed policies to a role: %v", r.Properties["ManagedPolicyArns"])
			}
		}
		if r.Condition != off {
			kinds[r.Type]++
		}
	}
	for kind, want := range n {
		if kinds[kind] != want {
			t.Errorf("expect %d %s after the transform (%s false), got %d", want, kind, off, kinds[kind])
		}
	}
}
