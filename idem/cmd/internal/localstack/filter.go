package localstack

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Filter is one pattern of an event source mapping's FilterCriteria, read
// the way Lambda's event filtering reads it, for the subset the local stack
// needs: a pattern is a JSON object whose keys name fields of the record;
// an object value matches a nested object, an array value lists what a
// field may be. An array element is an exact value (string, number, true,
// false, null) or one of {"prefix": s}, {"suffix": s}, {"exists": bool},
// {"anything-but": value or [values]}, {"numeric": [op, n, …]}. A field
// whose value is an array matches when any of its elements does. A record
// passes a mapping's filters when any one of them matches; with no filter
// every record passes.
type Filter struct {
	// Pattern is the pattern as the template gives it.
	Pattern string
	tree    map[string]any
}

// ParseFilter reads a FilterCriteria pattern.
func ParseFilter(pattern string) (*Filter, error) {
	tree, err := decodeJSON([]byte(pattern))
	if err != nil {
		return nil, fmt.Errorf("filter pattern %s: %w", pattern, err)
	}
	m, ok := tree.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("filter pattern %s: want a JSON object", pattern)
	}
	if err := checkPattern(m); err != nil {
		return nil, fmt.Errorf("filter pattern %s: %w", pattern, err)
	}
	return &Filter{Pattern: pattern, tree: m}, nil
}

// decodeJSON decodes a document with its numbers as json.Number.
func decodeJSON(b []byte) (any, error) {
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, err
	}
	if d.More() {
		return nil, fmt.Errorf("more than one JSON value")
	}
	return v, nil
}

func checkPattern(p map[string]any) error {
	for k, v := range p {
		switch v := v.(type) {
		case map[string]any:
			if err := checkPattern(v); err != nil {
				return fmt.Errorf("%s.%w", k, err)
			}
		case []any:
			for _, e := range v {
				op, ok := e.(map[string]any)
				if !ok {
					continue
				}
				if len(op) != 1 {
					return fmt.Errorf("%s: want one operator in %v", k, op)
				}
				for name, arg := range op {
					if err := checkOperator(name, arg); err != nil {
						return fmt.Errorf("%s: %w", k, err)
					}
				}
			}
		default:
			return fmt.Errorf("%s: want an object or an array, got %v", k, v)
		}
	}
	return nil
}

func checkOperator(name string, arg any) error {
	switch name {
	case "prefix", "suffix":
		if _, ok := arg.(string); !ok {
			return fmt.Errorf("%s wants a string, got %v", name, arg)
		}
	case "exists":
		if _, ok := arg.(bool); !ok {
			return fmt.Errorf("exists wants true or false, got %v", arg)
		}
	case "anything-but":
	case "numeric":
		a, ok := arg.([]any)
		if !ok || len(a) == 0 || len(a)%2 != 0 {
			return fmt.Errorf("numeric wants [op, n] or [op, n, op, n], got %v", arg)
		}
		for i := 0; i < len(a); i += 2 {
			op, _ := a[i].(string)
			if !slices.Contains([]string{"=", "<", "<=", ">", ">="}, op) {
				return fmt.Errorf("numeric: unknown operator %v", a[i])
			}
			if _, ok := toFloat(a[i+1]); !ok {
				return fmt.Errorf("numeric: want a number after %s, got %v", op, a[i+1])
			}
		}
	default:
		return fmt.Errorf("operator %q is not emulated locally", name)
	}
	return nil
}

// Match reports whether a record (decoded JSON, numbers as json.Number or
// float64) matches the pattern.
func (f *Filter) Match(record map[string]any) bool { return matchObject(f.tree, record) }

func matchObject(p, rec map[string]any) bool {
	for k, pv := range p {
		v, present := rec[k]
		switch pv := pv.(type) {
		case map[string]any:
			sub, ok := v.(map[string]any)
			if !ok || !matchObject(pv, sub) {
				return false
			}
		case []any:
			if !matchField(pv, v, present) {
				return false
			}
		}
	}
	return true
}

// matchField reports whether any of a pattern's array elements matches a
// field's value.
func matchField(p []any, v any, present bool) bool {
	values := []any{v}
	if a, ok := v.([]any); ok {
		values = a
	}
	for _, e := range p {
		if op, ok := e.(map[string]any); ok {
			if ex, ok := op["exists"].(bool); ok {
				if ex == (present && v != nil) {
					return true
				}
				continue
			}
		}
		if !present {
			continue
		}
		for _, val := range values {
			if matchValue(e, val) {
				return true
			}
		}
	}
	return false
}

func matchValue(e, v any) bool {
	op, ok := e.(map[string]any)
	if !ok {
		return equalValue(e, v)
	}
	s, isString := v.(string)
	for name, arg := range op {
		switch name {
		case "prefix":
			return isString && strings.HasPrefix(s, arg.(string))
		case "suffix":
			return isString && strings.HasSuffix(s, arg.(string))
		case "anything-but":
			not, ok := arg.([]any)
			if !ok {
				not = []any{arg}
			}
			return !slices.ContainsFunc(not, func(x any) bool { return equalValue(x, v) })
		case "numeric":
			n, ok := toFloat(v)
			if !ok {
				return false
			}
			a := arg.([]any)
			for i := 0; i < len(a); i += 2 {
				b, _ := toFloat(a[i+1])
				if !compare(a[i].(string), n, b) {
					return false
				}
			}
			return true
		}
	}
	return false
}

// equalValue compares two JSON values: strings to strings, numbers to
// numbers by value, booleans and null to themselves.
func equalValue(a, b any) bool {
	if x, ok := toFloat(a); ok {
		y, ok := toFloat(b)
		return ok && x == y
	}
	switch a := a.(type) {
	case string:
		s, ok := b.(string)
		return ok && a == s
	case bool:
		x, ok := b.(bool)
		return ok && a == x
	case nil:
		return b == nil
	}
	return false
}

func toFloat(v any) (float64, bool) {
	switch n := v.(type) {
	case json.Number:
		f, err := strconv.ParseFloat(string(n), 64)
		return f, err == nil
	case float64:
		return n, true
	}
	return 0, false
}

func compare(op string, a, b float64) bool {
	switch op {
	case "=":
		return a == b
	case "<":
		return a < b
	case "<=":
		return a <= b
	case ">":
		return a > b
	case ">=":
		return a >= b
	}
	return false
}

// matchAny reports whether a record passes a mapping's filters: any one
// matches, or there are none.
func matchAny(filters []*Filter, record map[string]any) bool {
	if len(filters) == 0 {
		return true
	}
	return slices.ContainsFunc(filters, func(f *Filter) bool { return f.Match(record) })
}
