package localstack

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

func (r *resolver) ref(name string) (any, error) {
	if name == "AWS::NoValue" {
		return noValue, nil
	}
	if v, ok := r.pseudo[name]; ok {
		return v, nil
	}
	if strings.HasPrefix(name, "AWS::") {
		return nil, fmt.Errorf("the Ref %s names an unknown pseudo parameter", name)
	}
	if v, ok := r.params[name]; ok {
		return v, nil
	}
	if _, ok := r.t.Resources[name]; !ok {
		return nil, fmt.Errorf("the Ref %s names no parameter or resource", name)
	}
	rv, err := r.resource(name)
	if err != nil {
		return nil, err
	}
	return rv.Ref, nil
}

func (r *resolver) getAtt(id, attr string) (any, error) {
	if _, ok := r.t.Resources[id]; !ok {
		return nil, fmt.Errorf("Fn::GetAtt %s.%s: no such resource", id, attr)
	}
	rv, err := r.resource(id)
	if err != nil {
		return nil, err
	}
	v, ok := rv.Attrs[attr]
	if !ok {
		return nil, fmt.Errorf("Fn::GetAtt %s.%s: attribute not available locally", id, attr)
	}
	return v, nil
}

var subVar = regexp.MustCompile(`\$\{([^}]*)\}`)

func (r *resolver) sub(arg any) (any, error) {
	var tmpl string
	vars := map[string]any{}
	switch a := arg.(type) {
	case string:
		tmpl = a
	case []any:
		if len(a) != 2 {
			return nil, fmt.Errorf("Fn::Sub: want [string, variables], got %v", arg)
		}
		tmpl, _ = a[0].(string)
		for k, v := range mapOf(a[1]) {
			ev, err := r.eval(v)
			if err != nil {
				return nil, fmt.Errorf("Fn::Sub variable %s: %w", k, err)
			}
			vars[k] = ev
		}
	default:
		return nil, fmt.Errorf("Fn::Sub: want a string, got %v", arg)
	}
	var firstErr error
	out := subVar.ReplaceAllStringFunc(tmpl, func(m string) string {
		name := strings.TrimSpace(m[2 : len(m)-1])
		if strings.HasPrefix(name, "!") {
			return "${" + name[1:] + "}" // ${!Literal}
		}
		var v any
		var err error
		if x, ok := vars[name]; ok {
			v = x
		} else if id, attr, found := strings.Cut(name, "."); found && !strings.HasPrefix(name, "AWS::") {
			v, err = r.getAtt(id, attr)
		} else {
			v, err = r.ref(name)
		}
		if err != nil && firstErr == nil {
			firstErr = fmt.Errorf("Fn::Sub: %w", err)
		}
		return scalarString(v)
	})
	if firstErr != nil {
		return nil, firstErr
	}
	return out, nil
}

func (r *resolver) condition(name string) (bool, error) {
	if v, ok := r.conditions[name]; ok {
		return v, nil
	}
	def, ok := r.t.Conditions[name]
	if !ok {
		return false, fmt.Errorf("no condition %s", name)
	}
	if r.evaluating[name] {
		return false, fmt.Errorf("condition %s refers to itself", name)
	}
	r.evaluating[name] = true
	defer delete(r.evaluating, name)
	ev, err := r.eval(def)
	if err != nil {
		return false, fmt.Errorf("condition %s: %w", name, err)
	}
	b, ok := ev.(bool)
	if !ok {
		return false, fmt.Errorf("condition %s is not a condition function", name)
	}
	r.conditions[name] = b
	return b, nil
}

// scalarString renders a scalar as CloudFormation passes it on: numbers in
// decimal, booleans as "true"/"false".
func scalarString(v any) string {
	switch x := v.(type) {
	case nil, noValueType:
		return ""
	case string:
		return x
	case int64:
		return strconv.FormatInt(x, 10)
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	case bool:
		return strconv.FormatBool(x)
	}
	return fmt.Sprint(v)
}

func stringified(v any) any {
	switch v.(type) {
	case map[string]any, []any:
		return v
	}
	return scalarString(v)
}
