package localstack

import (
	"fmt"
	"maps"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// Template is a parsed SAM or CloudFormation template. Values are plain Go
// values (map[string]any, []any, string, int64, float64, bool, nil) with
// short-form intrinsics written long: !Ref X is map[string]any{"Ref": "X"},
// !GetAtt A.B is {"Fn::GetAtt": ["A", "B"]}, !Sub s is {"Fn::Sub": s}.
type Template struct {
	Parameters map[string]Parameter
	Conditions map[string]any
	Mappings   map[string]any
	Resources  map[string]Resource
	// Globals is the SAM Globals section, by resource kind ("Function").
	Globals map[string]map[string]any
}

// Parameter is a template parameter.
type Parameter struct {
	Type          string
	Default       any // nil when the parameter has none
	AllowedValues []any
	AllowedRegexp string
	MinValue      *float64
	MaxValue      *float64
}

// Resource is one resource of a template.
type Resource struct {
	LogicalID  string
	Type       string
	Condition  string
	Properties map[string]any
	Metadata   map[string]any
}

// ReadTemplate reads and parses the template at path.
func ReadTemplate(path string) (*Template, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("localstack: %w", err)
	}
	t, err := ParseTemplate(b)
	if err != nil {
		return nil, fmt.Errorf("localstack: %s: %w", path, err)
	}
	return t, nil
}

// ParseTemplate parses a template in YAML (or JSON, which is YAML),
// CloudFormation's short-form tags included.
func ParseTemplate(b []byte) (*Template, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(b, &doc); err != nil {
		return nil, err
	}
	if len(doc.Content) == 0 {
		return nil, fmt.Errorf("empty template")
	}
	v, err := plain(doc.Content[0])
	if err != nil {
		return nil, err
	}
	top, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("template is not a mapping")
	}
	t := &Template{
		Parameters: map[string]Parameter{},
		Conditions: mapOf(top["Conditions"]),
		Mappings:   mapOf(top["Mappings"]),
		Resources:  map[string]Resource{},
		Globals:    map[string]map[string]any{},
	}
	for name, p := range mapOf(top["Parameters"]) {
		pm := mapOf(p)
		param := Parameter{Default: pm["Default"], AllowedValues: listOf(pm["AllowedValues"])}
		param.Type, _ = pm["Type"].(string)
		param.AllowedRegexp, _ = pm["AllowedPattern"].(string)
		if f, ok := number(pm["MinValue"]); ok {
			param.MinValue = &f
		}
		if f, ok := number(pm["MaxValue"]); ok {
			param.MaxValue = &f
		}
		t.Parameters[name] = param
	}
	for kind, g := range mapOf(top["Globals"]) {
		t.Globals[kind] = mapOf(g)
	}
	resources := mapOf(top["Resources"])
	if len(resources) == 0 {
		return nil, fmt.Errorf("template has no Resources")
	}
	for id, r := range resources {
		rm := mapOf(r)
		res := Resource{LogicalID: id, Properties: mapOf(rm["Properties"]), Metadata: mapOf(rm["Metadata"])}
		res.Type, _ = rm["Type"].(string)
		res.Condition, _ = rm["Condition"].(string)
		if res.Type == "" {
			return nil, fmt.Errorf("resource %s has no Type", id)
		}
		t.Resources[id] = res
	}
	return t, nil
}

// OfType returns the logical ids of the resources of type typ, sorted.
func (t *Template) OfType(typ string) []string {
	var ids []string
	for id, r := range t.Resources {
		if r.Type == typ {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	return ids
}

// Created returns those of ids that the template creates with params,
// overrides of its parameters' defaults: the resources without a
// Condition, and those whose Condition holds.
func (t *Template) Created(params map[string]string, ids []string) ([]string, error) {
	r, err := newResolver(t, params, nil)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, id := range ids {
		if cond := t.Resources[id].Condition; cond != "" {
			ok, err := r.condition(cond)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", id, err)
			}
			if !ok {
				continue
			}
		}
		out = append(out, id)
	}
	return out, nil
}

// FunctionProperties returns a serverless function's properties with the
// template's Globals applied, as SAM applies them: the function's own value
// wins, except that maps (Environment.Variables, Tags…) are merged.
func (t *Template) FunctionProperties(id string) map[string]any {
	r := t.Resources[id]
	if r.Type != "AWS::Serverless::Function" {
		return r.Properties
	}
	return mergeGlobals(t.Globals["Function"], r.Properties)
}

func mergeGlobals(global, local map[string]any) map[string]any {
	out := maps.Clone(global)
	if out == nil {
		out = map[string]any{}
	}
	for k, v := range local {
		gm, gok := out[k].(map[string]any)
		lm, lok := v.(map[string]any)
		if gok && lok && !isIntrinsic(gm) && !isIntrinsic(lm) {
			out[k] = mergeGlobals(gm, lm)
			continue
		}
		out[k] = v
	}
	return out
}

// plain converts a YAML node to plain Go values, turning each short-form
// intrinsic tag into its long form.
func plain(n *yaml.Node) (any, error) {
	switch n.Kind {
	case yaml.AliasNode:
		return plain(n.Alias)
	case yaml.DocumentNode:
		if len(n.Content) == 0 {
			return nil, nil
		}
		return plain(n.Content[0])
	}
	var v any
	var err error
	switch n.Kind {
	case yaml.MappingNode:
		m := make(map[string]any, len(n.Content)/2)
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := n.Content[i]
			if k.Kind != yaml.ScalarNode {
				return nil, fmt.Errorf("line %d: mapping key is not a scalar", k.Line)
			}
			if k.Value == "<<" {
				return nil, fmt.Errorf("line %d: YAML merge keys are not supported in templates", k.Line)
			}
			if m[k.Value], err = plain(n.Content[i+1]); err != nil {
				return nil, err
			}
		}
		v = m
	case yaml.SequenceNode:
		l := make([]any, 0, len(n.Content))
		for _, c := range n.Content {
			cv, err := plain(c)
			if err != nil {
				return nil, err
			}
			l = append(l, cv)
		}
		v = l
	case yaml.ScalarNode:
		if strings.HasPrefix(n.Tag, "!") && !strings.HasPrefix(n.Tag, "!!") {
			v = n.Value // an intrinsic's argument: a string
		} else if err := n.Decode(&v); err != nil {
			return nil, fmt.Errorf("line %d: %w", n.Line, err)
		}
		switch x := v.(type) {
		case int:
			v = int64(x)
		case uint64:
			if x <= math.MaxInt64 {
				v = int64(x)
			}
		}
	default:
		return nil, fmt.Errorf("line %d: unexpected YAML node", n.Line)
	}
	if !strings.HasPrefix(n.Tag, "!") || strings.HasPrefix(n.Tag, "!!") {
		return v, nil
	}
	return shortForm(n, v)
}

// shortForm turns the value of a node tagged !Name into its long form.
func shortForm(n *yaml.Node, v any) (any, error) {
	name := strings.TrimPrefix(n.Tag, "!")
	switch name {
	case "Ref", "Condition":
		return map[string]any{name: v}, nil
	case "GetAtt":
		if s, ok := v.(string); ok {
			res, attr, found := strings.Cut(s, ".")
			if !found {
				return nil, fmt.Errorf("line %d: !GetAtt %q: want Resource.Attribute", n.Line, s)
			}
			v = []any{res, attr}
		}
		return map[string]any{"Fn::GetAtt": v}, nil
	case "Base64", "Cidr", "Equals", "FindInMap", "GetAZs", "If", "ImportValue", "Join", "Select",
		"Split", "Sub", "Transform", "And", "Not", "Or", "Length", "ToJsonString",
		// The Rules section's own; the local stack reads, never checks, them.
		"Contains", "EachMemberEquals", "EachMemberIn", "RefAll", "ValueOf", "ValueOfAll":
		return map[string]any{"Fn::" + name: v}, nil
	}
	return nil, fmt.Errorf("line %d: unknown tag %s", n.Line, n.Tag)
}

func isIntrinsic(m map[string]any) bool {
	if len(m) != 1 {
		return false
	}
	for k := range m {
		return k == "Ref" || k == "Condition" || strings.HasPrefix(k, "Fn::")
	}
	return false
}

func mapOf(v any) map[string]any {
	m, _ := v.(map[string]any)
	if m == nil {
		return map[string]any{}
	}
	return m
}

func listOf(v any) []any {
	l, _ := v.([]any)
	return l
}

// number reads a template number, which CloudFormation also accepts as a
// string.
func number(v any) (float64, bool) {
	switch x := v.(type) {
	case int64:
		return float64(x), true
	case float64:
		return x, true
	case string:
		f, err := strconv.ParseFloat(strings.TrimSpace(x), 64)
		return f, err == nil
	}
	return 0, false
}
