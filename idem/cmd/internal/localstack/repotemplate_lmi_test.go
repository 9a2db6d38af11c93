package localstack

import (
	"encoding/json"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// operatorPolicy is the least an operator role of Lambda Managed Instances
// needs, as AWS documents it (Lambda developer guide,
// "lambda-managed-instances-operator-role": the managed policy
// AWSLambdaManagedEC2ResourceOperator, version v1).
const operatorPolicy = `[
 {"Effect": "Allow", "Action": ["ec2:RunInstances", "ec2:CreateTags", "ec2:AttachNetworkInterface"],
  "Resource": ["arn:aws:ec2:*:*:instance/*", "arn:aws:ec2:*:*:network-interface/*", "arn:aws:ec2:*:*:volume/*"],
  "Condition": {"StringEquals": {"ec2:ManagedResourceOperator": "scaler.lambda.amazonaws.com"}}},
 {"Effect": "Allow", "Action": ["ec2:DescribeAvailabilityZones", "ec2:DescribeCapacityReservations", "ec2:DescribeInstances",
  "ec2:DescribeInstanceStatus", "ec2:DescribeInstanceTypeOfferings", "ec2:DescribeInstanceTypes", "ec2:DescribeSecurityGroups",
  "ec2:DescribeSubnets"], "Resource": "*"},
 {"Effect": "Allow", "Action": ["ec2:RunInstances", "ec2:CreateNetworkInterface"],
  "Resource": ["arn:aws:ec2:*:*:subnet/*", "arn:aws:ec2:*:*:security-group/*"]},
 {"Effect": "Allow", "Action": ["ec2:RunInstances"], "Resource": "arn:aws:ec2:*:*:image/*",
  "Condition": {"StringEquals": {"ec2:Owner": "amazon"}}}
]`

// TestRepositoryTemplateManagedInstances checks the template's Lambda
// Managed Instances option: off by default; when on, each function that
// has a Managed twin runs as that twin, the same function but for its
// memory and capacity provider (SAM cannot put CapacityProviderConfig under
// a condition, so the template declares both); the capacity provider on
// the functions' architecture with the operator role AWS documents; and
// the template, its default flipped, through cfn-lint and the SAM transform.
func TestRepositoryTemplateManagedInstances(t *testing.T) {
	tmpl, err := ReadTemplate("../../../../template.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if p := tmpl.Parameters["UseManagedInstances"]; p.Default != "false" {
		t.Errorf("UseManagedInstances: want Default \"false\", got %v", p.Default)
	}
	if p := tmpl.Parameters["ManagedInstancesMaxConcurrency"]; p.Type != "Number" || p.MinValue == nil || *p.MinValue != 1 || p.MaxValue == nil || *p.MaxValue != 1600 {
		t.Errorf("ManagedInstancesMaxConcurrency: want a Number from 1 to 1600 (PerExecutionEnvironmentMaxConcurrency's range), got %+v", p)
	}
	on, off := "UseManagedInstances", "UseDefaultCompute"
	if want := map[string]any{"Fn::Not": []any{map[string]any{"Condition": on}}}; !reflect.DeepEqual(tmpl.Conditions[off], want) {
		t.Errorf("condition %s: want !Not [!Condition %s], got %v", off, on, tmpl.Conditions[off])
	}

	twins := 0
	for _, id := range tmpl.OfType(typeFunction) {
		res := tmpl.Resources[id]
		cp, managed := res.Properties["CapacityProviderConfig"]
		if !managed {
			continue
		}
		twins++
		twin, ok := tmpl.Resources[strings.TrimPrefix(id, "Managed")]
		if !strings.HasPrefix(id, "Managed") || !ok {
			t.Errorf("%s: want a twin on the default compute named as it without Managed", id)
			continue
		}
		if res.Condition != on || twin.Condition != off {
			t.Errorf("%s, %s: want conditions %s and %s, got %q and %q", id, twin.LogicalID, on, off, res.Condition, twin.Condition)
		}
		if p, _ := getAtt(mapOf(cp)["Arn"]); tmpl.Resources[p].Type != "AWS::Serverless::CapacityProvider" || tmpl.Resources[p].Condition != on {
			t.Errorf("%s: want CapacityProviderConfig Arn: !GetAtt <an AWS::Serverless::CapacityProvider under %s>.Arn, got %v", id, on, mapOf(cp)["Arn"])
		}
		if ref := mapOf(mapOf(cp)["PerExecutionEnvironmentMaxConcurrency"])["Ref"]; ref != "ManagedInstancesMaxConcurrency" {
			t.Errorf("%s: want PerExecutionEnvironmentMaxConcurrency: !Ref ManagedInstancesMaxConcurrency, got %v", id, ref)
		}
		// Lambda Managed Instances' smallest function (developer guide,
		// "lambda-managed-instances-best-practices").
		if mem, _ := number(res.Properties["MemorySize"]); mem < 2048 {
			t.Errorf("%s: want MemorySize 2048 or more, got %v", id, res.Properties["MemorySize"])
		}
		// The same function: a difference is one twin edited, not the other.
		props := maps.Clone(res.Properties)
		delete(props, "CapacityProviderConfig")
		delete(props, "MemorySize")
		got, _ := json.Marshal(props)
		for _, api := range tmpl.OfType("AWS::Serverless::HttpApi") {
			if base, ok := strings.CutPrefix(api, "Managed"); ok {
				got = []byte(strings.ReplaceAll(string(got), `{"Ref":"`+api+`"}`, `{"Ref":"`+base+`"}`))
			}
		}
		want, _ := json.Marshal(twin.Properties)
		if string(got) != string(want) || !reflect.DeepEqual(res.Metadata, twin.Metadata) {
			t.Errorf("%s differs from %s beyond its memory and capacity provider:\n got %s\nwant %s", id, twin.LogicalID, got, want)
		}
	}
	if twins < 2 {
		t.Errorf("want QueueFunction and WebhookFunction able to run on managed instances, got %d Managed function(s)", twins)
	}

	for _, id := range tmpl.OfType("AWS::Serverless::CapacityProvider") {
		p := tmpl.Resources[id].Properties
		vpc := mapOf(p["VpcConfig"])
		if mapOf(vpc["SubnetIds"])["Ref"] != "ManagedInstancesSubnetIds" || mapOf(vpc["SecurityGroupIds"])["Ref"] != "ManagedInstancesSecurityGroupIds" {
			t.Errorf("%s: want VpcConfig from ManagedInstancesSubnetIds and ManagedInstancesSecurityGroupIds, got %v", id, vpc)
		}
		// The capacity provider's default architecture is x86_64.
		arch := listOf(mapOf(p["InstanceRequirements"])["Architectures"])
		if fn := tmpl.FunctionProperties("ManagedQueueFunction"); !reflect.DeepEqual(arch, listOf(fn["Architectures"])) {
			t.Errorf("%s: want InstanceRequirements Architectures %v, the functions', got %v", id, fn["Architectures"], arch)
		}
		role, _ := getAtt(p["OperatorRole"])
		rp := tmpl.Resources[role].Properties
		if tmpl.Resources[role].Type != "AWS::IAM::Role" {
			t.Fatalf("%s: want OperatorRole: !GetAtt <the template's role>.Arn (SAM's own would attach a managed policy), got %v", id, p["OperatorRole"])
		}
		trust := listOf(mapOf(rp["AssumeRolePolicyDocument"])["Statement"])
		if len(trust) != 1 || mapOf(mapOf(trust[0])["Principal"])["Service"] != "lambda.amazonaws.com" || mapOf(trust[0])["Action"] != "sts:AssumeRole" {
			t.Errorf("%s: want a trust policy letting lambda.amazonaws.com sts:AssumeRole, got %v", role, trust)
		}
		var statements []any
		walkStatements(rp["Policies"], func(st map[string]any) { statements = append(statements, st) })
		var want []any
		if err := json.Unmarshal([]byte(operatorPolicy), &want); err != nil {
			t.Fatal(err)
		}
		if got, _ := json.Marshal(statements); !jsonEqual(got, want) {
			t.Errorf("%s: want the statements AWS documents for an operator role:\n got %s\nwant %s", role, got, operatorPolicy)
		}
	}
	if len(tmpl.OfType("AWS::Serverless::CapacityProvider")) != 1 {
		t.Errorf("want one AWS::Serverless::CapacityProvider")
	}

	// The template as it deploys with UseManagedInstances "true".
	python := os.Getenv("IDEM_PYTHON")
	if python == "" {
		python = "python3"
	}
	if err := exec.Command(python, "-c", "import samtranslator, cfnlint").Run(); err != nil {
		t.Skipf("aws-sam-translator or cfn-lint is not installed for %s (make lint-template installs them): %v", python, err)
	}
	flipped := flipDefaults(t, "../../../../template.yaml", map[string]string{
		"UseManagedInstances":              "true",
		"ManagedInstancesSubnetIds":        "subnet-0123456789abcdef0,subnet-0123456789abcdef1",
		"ManagedInstancesSecurityGroupIds": "sg-0123456789abcdef0",
	})
	if out, err := exec.Command(python, "-c", "import sys; from cfnlint.runner import main; sys.exit(main())", flipped).CombinedOutput(); err != nil {
		t.Errorf("cfn-lint, UseManagedInstances true: %v\n%s", err, out)
	}
	cmd := exec.Command(python, "../../../../.ci/sam_translate.py", flipped)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("SAM transform, UseManagedInstances true: %v\n%s", err, stderr.String())
	}
	checkTranslated(t, out, off, map[string]int{"AWS::Lambda::Function": 4, "AWS::Lambda::EventSourceMapping": 3,
		"AWS::ApiGatewayV2::Api": 1, "AWS::Lambda::Permission": 2, "AWS::Lambda::CapacityProvider": 1})
}

func jsonEqual(got []byte, want any) bool {
	var g any
	return json.Unmarshal(got, &g) == nil && reflect.DeepEqual(g, want)
}

// flipDefaults writes a copy of the template whose parameters default to
// values, tags (!Ref…) kept, and returns its path.
func flipDefaults(t *testing.T, path string, values map[string]string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	set := 0
	params := yamlField(doc.Content[0], "Parameters")
	for name, v := range values {
		if def := yamlField(yamlField(params, name), "Default"); def != nil {
			def.SetString(v)
			set++
		}
	}
	if set != len(values) {
		t.Fatalf("%s: want parameters %v with defaults", path, values)
	}
	out, err := yaml.Marshal(&doc)
	if err != nil {
		t.Fatal(err)
	}
	flipped := filepath.Join(t.TempDir(), "template.yaml")
	if err := os.WriteFile(flipped, out, 0o644); err != nil {
		t.Fatal(err)
	}
	return flipped
}

func yamlField(n *yaml.Node, key string) *yaml.Node {
	if n == nil || n.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return n.Content[i+1]
		}
	}
	return nil
}
