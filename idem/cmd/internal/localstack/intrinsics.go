package localstack

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// noValue is what !Ref AWS::NoValue evaluates to: the enclosing key or list
// item is dropped.
type noValueType struct{}

var noValue = noValueType{}

// resolver evaluates a template's intrinsic functions against local values.
type resolver struct {
	t      *Template
	params map[string]any    // parameter values: string, or []any for lists
	pseudo map[string]string // AWS::Region, AWS::AccountId…
	// resource returns a resource's Ref value and attributes, creating it
	// first when it is one the stack creates.
	resource func(id string) (*ResourceValue, error)

	conditions map[string]bool
	evaluating map[string]bool // conditions being evaluated, against loops
}

// ResourceValue is what a resource resolves to locally: its Ref value and
// its Fn::GetAtt attributes.
type ResourceValue struct {
	Ref   string
	Attrs map[string]string
}

func newResolver(t *Template, overrides map[string]string, pseudo map[string]string) (*resolver, error) {
	r := &resolver{t: t, params: map[string]any{}, pseudo: pseudo, conditions: map[string]bool{}, evaluating: map[string]bool{}}
	for name := range overrides {
		if _, ok := t.Parameters[name]; !ok {
			return nil, fmt.Errorf("parameter override %s: the template has no such parameter", name)
		}
	}
	names := make([]string, 0, len(t.Parameters))
	for name := range t.Parameters {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		p := t.Parameters[name]
		val, ok := overrides[name]
		if !ok {
			if p.Default == nil {
				return nil, fmt.Errorf("parameter %s has no default: pass a value", name)
			}
			val = scalarString(p.Default)
		}
		if err := p.check(val); err != nil {
			return nil, fmt.Errorf("parameter %s=%q: %w", name, val, err)
		}
		if strings.HasPrefix(p.Type, "List<") || p.Type == "CommaDelimitedList" {
			var l []any
			for _, s := range strings.Split(val, ",") {
				l = append(l, strings.TrimSpace(s))
			}
			r.params[name] = l
		} else {
			r.params[name] = val
		}
	}
	return r, nil
}

// check applies a parameter's constraints, as CloudFormation does.
func (p Parameter) check(val string) error {
	if len(p.AllowedValues) > 0 && !slices.ContainsFunc(p.AllowedValues, func(a any) bool { return scalarString(a) == val }) {
		return fmt.Errorf("not one of the allowed values %v", p.AllowedValues)
	}
	if p.AllowedRegexp != "" {
		re, err := regexp.Compile("^(?:" + p.AllowedRegexp + ")$")
		if err != nil {
			return fmt.Errorf("AllowedPattern: %w", err)
		}
		if !re.MatchString(val) {
			return fmt.Errorf("does not match %s", p.AllowedRegexp)
		}
	}
	if p.Type == "Number" {
		f, err := strconv.ParseFloat(val, 64)
		if err != nil {
			return fmt.Errorf("not a number")
		}
		if p.MinValue != nil && f < *p.MinValue {
			return fmt.Errorf("less than MinValue %v", *p.MinValue)
		}
		if p.MaxValue != nil && f > *p.MaxValue {
			return fmt.Errorf("more than MaxValue %v", *p.MaxValue)
		}
	}
	return nil
}

// eval evaluates every intrinsic function in v.
func (r *resolver) eval(v any) (any, error) {
	switch x := v.(type) {
	case map[string]any:
		if isIntrinsic(x) {
			for k, arg := range x {
				return r.intrinsic(k, arg)
			}
		}
		out := make(map[string]any, len(x))
		for k, e := range x {
			ev, err := r.eval(e)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", k, err)
			}
			if ev != noValue {
				out[k] = ev
			}
		}
		return out, nil
	case []any:
		out := make([]any, 0, len(x))
		for i, e := range x {
			ev, err := r.eval(e)
			if err != nil {
				return nil, fmt.Errorf("[%d]: %w", i, err)
			}
			if ev != noValue {
				out = append(out, ev)
			}
		}
		return out, nil
	}
	return v, nil
}

func (r *resolver) evalString(v any) (string, error) {
	ev, err := r.eval(v)
	if err != nil {
		return "", err
	}
	switch ev.(type) {
	case map[string]any, []any, noValueType:
		return "", fmt.Errorf("want a string, got %v", ev)
	}
	return scalarString(ev), nil
}

func (r *resolver) evalList(v any) ([]any, error) {
	ev, err := r.eval(v)
	if err != nil {
		return nil, err
	}
	l, ok := ev.([]any)
	if !ok {
		return nil, fmt.Errorf("want a list, got %v", ev)
	}
	return l, nil
}

func (r *resolver) intrinsic(name string, arg any) (any, error) {
	switch name {
	case "Ref":
		s, ok := arg.(string)
		if !ok {
			return nil, fmt.Errorf("a Ref wants a name, got %v", arg)
		}
		return r.ref(s)
	case "Condition":
		s, _ := arg.(string)
		return r.condition(s)
	case "Fn::GetAtt":
		var parts []string
		switch a := arg.(type) {
		case string:
			id, attr, _ := strings.Cut(a, ".")
			parts = []string{id, attr}
		case []any:
			for _, e := range a {
				s, err := r.evalString(e)
				if err != nil {
					return nil, fmt.Errorf("Fn::GetAtt: %w", err)
				}
				parts = append(parts, s)
			}
		}
		if len(parts) != 2 {
			return nil, fmt.Errorf("Fn::GetAtt: want [Resource, Attribute], got %v", arg)
		}
		return r.getAtt(parts[0], parts[1])
	case "Fn::Sub":
		return r.sub(arg)
	case "Fn::If":
		a, ok := arg.([]any)
		if !ok || len(a) != 3 {
			return nil, fmt.Errorf("Fn::If: want [condition, then, else], got %v", arg)
		}
		cond, _ := a[0].(string)
		ok, err := r.condition(cond)
		if err != nil {
			return nil, err
		}
		if ok {
			return r.eval(a[1])
		}
		return r.eval(a[2])
	case "Fn::Equals":
		a, ok := arg.([]any)
		if !ok || len(a) != 2 {
			return nil, fmt.Errorf("Fn::Equals: want two values, got %v", arg)
		}
		x, err := r.eval(a[0])
		if err != nil {
			return nil, err
		}
		y, err := r.eval(a[1])
		if err != nil {
			return nil, err
		}
		return fmt.Sprint(stringified(x)) == fmt.Sprint(stringified(y)), nil
	case "Fn::Not", "Fn::And", "Fn::Or":
		a, ok := arg.([]any)
		if !ok || len(a) == 0 {
			return nil, fmt.Errorf("%s: want a list of conditions", name)
		}
		var vals []bool
		for _, e := range a {
			ev, err := r.eval(e)
			if err != nil {
				return nil, err
			}
			b, ok := ev.(bool)
			if !ok {
				return nil, fmt.Errorf("%s: %v is not a condition", name, e)
			}
			vals = append(vals, b)
		}
		switch name {
		case "Fn::Not":
			return !vals[0], nil
		case "Fn::And":
			return !slices.Contains(vals, false), nil
		}
		return slices.Contains(vals, true), nil
	case "Fn::Join":
		a, ok := arg.([]any)
		if !ok || len(a) != 2 {
			return nil, fmt.Errorf("Fn::Join: want [delimiter, list], got %v", arg)
		}
		delim, _ := a[0].(string)
		l, err := r.evalList(a[1])
		if err != nil {
			return nil, fmt.Errorf("Fn::Join: %w", err)
		}
		parts := make([]string, len(l))
		for i, e := range l {
			parts[i] = scalarString(e)
		}
		return strings.Join(parts, delim), nil
	case "Fn::Select":
		a, ok := arg.([]any)
		if !ok || len(a) != 2 {
			return nil, fmt.Errorf("Fn::Select: want [index, list], got %v", arg)
		}
		is, err := r.evalString(a[0])
		if err != nil {
			return nil, err
		}
		i, err := strconv.Atoi(is)
		if err != nil {
			return nil, fmt.Errorf("Fn::Select: index %q", is)
		}
		l, err := r.evalList(a[1])
		if err != nil {
			return nil, fmt.Errorf("Fn::Select: %w", err)
		}
		if i < 0 || i >= len(l) {
			return nil, fmt.Errorf("Fn::Select: index %d out of range", i)
		}
		return l[i], nil
	case "Fn::Split":
		a, ok := arg.([]any)
		if !ok || len(a) != 2 {
			return nil, fmt.Errorf("Fn::Split: want [delimiter, string], got %v", arg)
		}
		delim, _ := a[0].(string)
		s, err := r.evalString(a[1])
		if err != nil {
			return nil, err
		}
		var out []any
		for _, p := range strings.Split(s, delim) {
			out = append(out, p)
		}
		return out, nil
	case "Fn::FindInMap":
		a, ok := arg.([]any)
		if !ok || len(a) < 3 {
			return nil, fmt.Errorf("Fn::FindInMap: want [map, key, key], got %v", arg)
		}
		var keys []string
		for _, e := range a[:3] {
			s, err := r.evalString(e)
			if err != nil {
				return nil, err
			}
			keys = append(keys, s)
		}
		v, ok := mapOf(mapOf(r.t.Mappings[keys[0]])[keys[1]])[keys[2]]
		if !ok {
			return nil, fmt.Errorf("Fn::FindInMap: no %s", strings.Join(keys, "."))
		}
		return r.eval(v)
	case "Fn::GetAZs":
		region := r.pseudo["AWS::Region"]
		return []any{region + "a", region + "b", region + "c"}, nil
	case "Fn::Base64":
		s, err := r.evalString(arg)
		if err != nil {
			return nil, err
		}
		return base64.StdEncoding.EncodeToString([]byte(s)), nil
	case "Fn::ToJsonString":
		v, err := r.eval(arg)
		if err != nil {
			return nil, err
		}
		b, err := json.Marshal(v)
		return string(b), err
	case "Fn::Length":
		l, err := r.evalList(arg)
		if err != nil {
			return nil, err
		}
		return int64(len(l)), nil
	}
	return nil, fmt.Errorf("%s is not supported by the local stack", name)
}
