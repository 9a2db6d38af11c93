package localstack

import (
	"context"
	"encoding/json"
	"os"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"gopkg.in/yaml.v3"

	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/idemkit/kit/idem/idemtest"
)

func TestParseTemplateShortForms(t *testing.T) {
	tmpl, err := ParseTemplate([]byte(`
Resources:
  R:
    Type: Custom::Thing
    Properties:
      Ref: !Ref Name
      Att: !GetAtt Queue.Arn
      DottedAtt: !GetAtt Db.Endpoint.Address
      Sub: !Sub "${AWS::StackName}-x"
      SubList: !Sub ["${A}-y", {A: !Ref Name}]
      If: !If [Cond, 1, !Ref "AWS::NoValue"]
      Join: !Join [",", [a, !Ref Name]]
      Long: {"Fn::GetAtt": [Queue, Arn]}
      Num: 30
      Float: 1.5
      Bool: true
      Str: "007"
`))
	if err != nil {
		t.Fatal(err)
	}
	got := tmpl.Resources["R"].Properties
	want := map[string]any{
		"Ref":       map[string]any{"Ref": "Name"},
		"Att":       map[string]any{"Fn::GetAtt": []any{"Queue", "Arn"}},
		"DottedAtt": map[string]any{"Fn::GetAtt": []any{"Db", "Endpoint.Address"}},
		"Sub":       map[string]any{"Fn::Sub": "${AWS::StackName}-x"},
		"SubList":   map[string]any{"Fn::Sub": []any{"${A}-y", map[string]any{"A": map[string]any{"Ref": "Name"}}}},
		"If":        map[string]any{"Fn::If": []any{"Cond", int64(1), map[string]any{"Ref": "AWS::NoValue"}}},
		"Join":      map[string]any{"Fn::Join": []any{",", []any{"a", map[string]any{"Ref": "Name"}}}},
		"Long":      map[string]any{"Fn::GetAtt": []any{"Queue", "Arn"}},
		"Num":       int64(30),
		"Float":     1.5,
		"Bool":      true,
		"Str":       "007",
	}
	for k, w := range want {
		if !reflect.DeepEqual(got[k], w) {
			t.Errorf("%s: expect %#v, got %#v", k, w, got[k])
		}
	}
}

func TestParseTemplateErrors(t *testing.T) {
	for _, tc := range []struct{ name, yaml, err string }{
		{"unknown tag", "Resources: {R: {Type: X, Properties: {A: !Nope x}}}", "unknown tag !Nope"},
		{"getatt without attribute", "Resources: {R: {Type: X, Properties: {A: !GetAtt Queue}}}", "Resource.Attribute"},
		{"no resources", "Parameters: {}", "no Resources"},
		{"no type", "Resources: {R: {Properties: {}}}", "no Type"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseTemplate([]byte(tc.yaml))
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Fatalf("expect an error saying %q, got %v", tc.err, err)
			}
		})
	}
}

// Created: which resources a template creates, its parameters' defaults
// overridden or not; Rules' own functions parse.
func TestTemplateCreated(t *testing.T) {
	tmpl, err := ParseTemplate([]byte(`
Parameters:
  Managed: {Type: String, Default: "false", AllowedValues: ["false", "true"]}
  Subnets: {Type: CommaDelimitedList, Default: ""}
Conditions:
  On: !Equals [!Ref Managed, "true"]
  Off: !Not [!Condition On]
Rules:
  Network:
    RuleCondition: !Equals [!Ref Managed, "true"]
    Assertions: [{Assert: !Not [!Contains [!Ref Subnets, ""]]}]
Resources:
  A: {Type: AWS::Serverless::Function}
  B: {Type: AWS::Serverless::Function, Condition: Off}
  ManagedB: {Type: AWS::Serverless::Function, Condition: On}
`))
	if err != nil {
		t.Fatal(err)
	}
	ids := tmpl.OfType(typeFunction)
	for _, tc := range []struct {
		params map[string]string
		want   []string
	}{
		{nil, []string{"A", "B"}},
		{map[string]string{"Managed": "true"}, []string{"A", "ManagedB"}},
	} {
		got, err := tmpl.Created(tc.params, ids)
		if err != nil || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("Created(%v): expect %v, got %v, %v", tc.params, tc.want, got, err)
		}
	}
	if _, err := tmpl.Created(map[string]string{"Managed": "yes"}, ids); err == nil {
		t.Error("Created with a value the parameter does not allow: expect an error")
	}
}

func TestResolver(t *testing.T) {
	tmpl, err := ParseTemplate([]byte(`
Parameters:
  Days: {Type: Number, Default: 30, MinValue: 15}
  Store: {Type: String, Default: ssm, AllowedValues: [ssm, secretsmanager]}
  Name: {Type: String, Default: app/secret, AllowedPattern: "^[a-z/]+$"}
Conditions:
  UseSSM: !Equals [!Ref Store, ssm]
  NotSSM: !Not [!Condition UseSSM]
  Both: !And [!Condition UseSSM, !Equals [!Ref Days, 30]]
Mappings:
  Sizes: {small: {mb: 128}}
Resources:
  R: {Type: Custom::Thing}
`))
	if err != nil {
		t.Fatal(err)
	}
	pseudo := map[string]string{"AWS::Region": "eu-west-1", "AWS::StackName": "s", "AWS::AccountId": AccountID, "AWS::Partition": "aws"}
	for _, tc := range []struct {
		name      string
		overrides map[string]string
		in        string
		want      any
	}{
		{"number parameter is a string", nil, `!Ref Days`, "30"},
		{"override", map[string]string{"Days": "45"}, `!Ref Days`, "45"},
		{"sub", nil, `!Sub "arn:${AWS::Partition}:ssm:${AWS::Region}:${AWS::AccountId}:parameter/${Name}"`, "arn:aws:ssm:eu-west-1:123456789012:parameter/app/secret"},
		{"sub literal", nil, `!Sub "${!Literal}-${AWS::StackName}"`, "${Literal}-s"},
		{"sub variables", nil, `!Sub ["/${N}", {N: !Ref Name}]`, "/app/secret"},
		{"if true", nil, `!If [UseSSM, a, b]`, "a"},
		{"if false", map[string]string{"Store": "secretsmanager"}, `!If [UseSSM, a, b]`, "b"},
		{"condition not", nil, `!If [NotSSM, a, b]`, "b"},
		{"condition and", nil, `!If [Both, a, b]`, "a"},
		{"novalue drops the key", map[string]string{"Store": "secretsmanager"}, `{A: !If [UseSSM, x, !Ref AWS::NoValue], B: y}`, map[string]any{"B": "y"}},
		{"novalue drops the item", nil, `[a, !Ref AWS::NoValue, b]`, []any{"a", "b"}},
		{"join", nil, `!Join ["-", [a, !Ref Days]]`, "a-30"},
		{"select split", nil, `!Select [1, !Split ["/", !Ref Name]]`, "secret"},
		{"find in map", nil, `!FindInMap [Sizes, small, mb]`, int64(128)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := newResolver(tmpl, tc.overrides, pseudo)
			if err != nil {
				t.Fatal(err)
			}
			var n yaml.Node
			if err := yaml.Unmarshal([]byte(tc.in), &n); err != nil {
				t.Fatal(err)
			}
			v, err := plain(&n)
			if err != nil {
				t.Fatal(err)
			}
			got, err := r.eval(v)
			if err != nil || !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("expect %#v, got %#v, %v", tc.want, got, err)
			}
		})
	}
	for _, tc := range []struct {
		name      string
		overrides map[string]string
		err       string
	}{
		{"below MinValue", map[string]string{"Days": "3"}, "MinValue"},
		{"not allowed", map[string]string{"Store": "vault"}, "allowed values"},
		{"pattern", map[string]string{"Name": "/Bad"}, "does not match"},
		{"unknown parameter", map[string]string{"Nope": "1"}, "no such parameter"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := newResolver(tmpl, tc.overrides, pseudo)
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Fatalf("expect an error saying %q, got %v", tc.err, err)
			}
		})
	}
}

// The tables and queues CreateResources makes from the repository's
// template.yaml have exactly the template's key schema, TTL, visibility,
// retention and redrive policy. The expectations are read from the YAML
// here, by the test, not by the code under test.
func TestCreateResourcesMatchesTemplate(t *testing.T) {
	raw := readRawTemplate(t, "../../../../template.yaml")
	tmpl, err := ReadTemplate("../../../../template.yaml")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	ddb := idemtest.Client(idemtest.Endpoint(t))
	sq := newSQS(testSQS(t), "us-east-1")
	stack := "tmpl-" + strconv.FormatInt(int64(os.Getpid()), 10)
	res, err := CreateResources(ctx, tmpl, ResourceConfig{DynamoDB: ddb, SQS: sq, StackName: stack, Region: "us-east-1", Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, tb := range res.Tables {
			_, _ = ddb.DeleteTable(context.Background(), &dynamodb.DeleteTableInput{TableName: aws.String(tb.Name)})
		}
		for _, q := range res.Queues {
			_, _ = sq.DeleteQueue(context.Background(), &sqs.DeleteQueueInput{QueueUrl: aws.String(q.URL)})
		}
	})

	rawResources := raw["Resources"].(map[string]any)
	var tables, queues int
	for id, r := range rawResources {
		rm := r.(map[string]any)
		props, _ := rm["Properties"].(map[string]any)
		switch rm["Type"] {
		case "AWS::DynamoDB::Table":
			tables++
			tb := res.Tables[id]
			if tb == nil {
				t.Errorf("%s: not created", id)
				continue
			}
			desc, err := ddb.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(tb.Name)})
			if err != nil {
				t.Fatal(err)
			}
			var gotKeys, wantKeys []string
			for _, k := range desc.Table.KeySchema {
				gotKeys = append(gotKeys, aws.ToString(k.AttributeName)+":"+string(k.KeyType))
			}
			for _, k := range props["KeySchema"].([]any) {
				km := k.(map[string]any)
				wantKeys = append(wantKeys, km["AttributeName"].(string)+":"+km["KeyType"].(string))
			}
			if !reflect.DeepEqual(gotKeys, wantKeys) {
				t.Errorf("%s: key schema: expect %v, got %v", id, wantKeys, gotKeys)
			}
			gotAttrs := map[string]string{}
			for _, a := range desc.Table.AttributeDefinitions {
				gotAttrs[aws.ToString(a.AttributeName)] = string(a.AttributeType)
			}
			wantAttrs := map[string]string{}
			for _, a := range props["AttributeDefinitions"].([]any) {
				am := a.(map[string]any)
				wantAttrs[am["AttributeName"].(string)] = am["AttributeType"].(string)
			}
			if !reflect.DeepEqual(gotAttrs, wantAttrs) {
				t.Errorf("%s: attributes: expect %v, got %v", id, wantAttrs, gotAttrs)
			}
			if bm := props["BillingMode"]; desc.Table.BillingModeSummary == nil || string(desc.Table.BillingModeSummary.BillingMode) != bm {
				t.Errorf("%s: billing mode: expect %v, got %+v", id, bm, desc.Table.BillingModeSummary)
			}
			ttl, err := ddb.DescribeTimeToLive(ctx, &dynamodb.DescribeTimeToLiveInput{TableName: aws.String(tb.Name)})
			if err != nil {
				t.Fatal(err)
			}
			wantTTL := ""
			if spec, ok := props["TimeToLiveSpecification"].(map[string]any); ok && spec["Enabled"] == true {
				wantTTL = spec["AttributeName"].(string)
			}
			gotTTL := ""
			if d := ttl.TimeToLiveDescription; d != nil && d.TimeToLiveStatus == "ENABLED" {
				gotTTL = aws.ToString(d.AttributeName)
			}
			if gotTTL != wantTTL {
				t.Errorf("%s: TTL attribute: expect %q, got %q", id, wantTTL, gotTTL)
			}
		case "AWS::SQS::Queue":
			queues++
			q := res.Queues[id]
			if q == nil {
				t.Errorf("%s: not created", id)
				continue
			}
			out, err := sq.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{
				QueueUrl: aws.String(q.URL), AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameAll},
			})
			if err != nil {
				t.Fatal(err)
			}
			for _, k := range []string{"VisibilityTimeout", "MessageRetentionPeriod", "ReceiveMessageWaitTimeSeconds", "DelaySeconds", "FifoQueue"} {
				w, ok := props[k]
				if !ok {
					continue
				}
				if got := out.Attributes[k]; got != scalarString(w) {
					t.Errorf("%s: %s: expect %v, got %q", id, k, w, got)
				}
			}
			if rp, ok := props["RedrivePolicy"].(map[string]any); ok {
				var got struct {
					DeadLetterTargetArn string `json:"deadLetterTargetArn"`
					MaxReceiveCount     any    `json:"maxReceiveCount"`
				}
				if err := json.Unmarshal([]byte(out.Attributes["RedrivePolicy"]), &got); err != nil {
					t.Fatalf("%s: RedrivePolicy %q: %v", id, out.Attributes["RedrivePolicy"], err)
				}
				dlqID := rp["deadLetterTargetArn"].(map[string]any)["Fn::GetAtt"].([]any)[0].(string)
				if dlq := res.Queues[dlqID]; dlq == nil || got.DeadLetterTargetArn != dlq.ARN {
					t.Errorf("%s: dead-letter target: expect %s's ARN, got %s", id, dlqID, got.DeadLetterTargetArn)
				}
				if scalarString(jsonNumber(got.MaxReceiveCount)) != scalarString(rp["maxReceiveCount"]) || q.MaxReceiveCount() != int(rp["maxReceiveCount"].(int)) {
					t.Errorf("%s: maxReceiveCount: expect %v, got %v (%d)", id, rp["maxReceiveCount"], got.MaxReceiveCount, q.MaxReceiveCount())
				}
			}
		}
	}
	if len(res.Tables) != tables || len(res.Queues) != queues || tables == 0 || queues == 0 {
		t.Errorf("expect %d tables and %d queues, got %d and %d", tables, queues, len(res.Tables), len(res.Queues))
	}

	// The functions' environment resolves to the local names.
	env, err := res.Eval(tmpl.FunctionProperties("WebhookFunction")["Environment"])
	if err != nil {
		t.Fatal(err)
	}
	vars := env.(map[string]any)["Variables"].(map[string]any)
	if vars["PROCESSED_TABLE"] != res.Tables["ProcessedTable"].Name || vars["ACCOUNTS_TABLE"] != res.Tables["AccountsTable"].Name {
		t.Errorf("table variables: expect the local table names, got %v", vars)
	}
	if vars["WEBHOOK_SECRET_PARAMETER"] != "/idemkit/webhook-secret" {
		t.Errorf("WEBHOOK_SECRET_PARAMETER: expect the SSM name, got %v", vars["WEBHOOK_SECRET_PARAMETER"])
	}
	if _, ok := vars["WEBHOOK_SECRET_ID"]; ok {
		t.Errorf("WEBHOOK_SECRET_ID: expect it dropped (AWS::NoValue) with SecretStore=ssm")
	}
}

// readRawTemplate reads a template with yaml.v3 alone, tags ignored.
func readRawTemplate(t *testing.T, path string) map[string]any {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var n yaml.Node
	if err := yaml.Unmarshal(b, &n); err != nil {
		t.Fatal(err)
	}
	var strip func(*yaml.Node)
	strip = func(n *yaml.Node) {
		if strings.HasPrefix(n.Tag, "!") && !strings.HasPrefix(n.Tag, "!!") {
			// keep the structure: {"Fn::GetAtt": [A, B]} for !GetAtt A.B
			name := strings.TrimPrefix(n.Tag, "!")
			inner := *n
			inner.Tag = ""
			if name == "GetAtt" && n.Kind == yaml.ScalarNode {
				a, b, _ := strings.Cut(n.Value, ".")
				inner = yaml.Node{Kind: yaml.SequenceNode, Content: []*yaml.Node{
					{Kind: yaml.ScalarNode, Value: a}, {Kind: yaml.ScalarNode, Value: b}}}
			}
			key := "Fn::" + name
			if name == "Ref" {
				key = "Ref"
			}
			*n = yaml.Node{Kind: yaml.MappingNode, Content: []*yaml.Node{{Kind: yaml.ScalarNode, Value: key}, &inner}}
		}
		for _, c := range n.Content {
			strip(c)
		}
	}
	strip(&n)
	var m map[string]any
	if err := n.Decode(&m); err != nil {
		t.Fatal(err)
	}
	return m
}

// A parameter the template's constraints refuse fails Start before it
// starts or builds anything.
func TestStartRefusesABadParameter(t *testing.T) {
	_, err := Start(context.Background(), func(o *Options) {
		o.Template = "../../../../template.yaml"
		o.BuildDir = t.TempDir()
		o.Parameters = map[string]string{"RetentionDays": "3"}
	})
	if err == nil || !strings.Contains(err.Error(), "RetentionDays") || !strings.Contains(err.Error(), "MinValue") {
		t.Fatalf("expect an error naming RetentionDays and its MinValue, got %v", err)
	}
}
