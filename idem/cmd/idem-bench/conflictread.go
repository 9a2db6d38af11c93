package main

// How the conflict model (conflicts.go) reads a request: the items it
// writes, checks or reads, each named by its table and key, and the
// partition each lives in.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log"
	"maps"
	"slices"
	"strings"
)

// read parses a modelled request's items.
func (cm *conflicts) read(ctx context.Context, op string, body []byte) (*modelRequest, error) {
	type keyed struct {
		TableName string
		Key       map[string]json.RawMessage
		Item      map[string]json.RawMessage
	}
	req := &modelRequest{op: op}
	var actions []keyed
	if op == "TransactWriteItems" {
		var in struct {
			TransactItems []struct{ Put, Update, Delete, ConditionCheck *keyed }
		}
		if err := json.Unmarshal(body, &in); err != nil {
			return nil, err
		}
		for _, a := range in.TransactItems {
			for _, k := range []*keyed{a.Put, a.Update, a.Delete, a.ConditionCheck} {
				if k != nil {
					actions = append(actions, *k)
				}
			}
		}
	} else {
		var in struct {
			keyed
			ConsistentRead bool
		}
		if err := json.Unmarshal(body, &in); err != nil {
			return nil, err
		}
		actions, req.consistent = []keyed{in.keyed}, in.ConsistentRead
	}
	for _, a := range actions {
		schema, err := cm.schemaOf(ctx, a.TableName)
		key := a.Key
		if a.Item != nil && err == nil {
			key = map[string]json.RawMessage{}
			for _, name := range schema {
				if v, ok := a.Item[name]; ok {
					key[name] = v
				}
			}
		}
		it := itemRef{table: a.TableName}
		if len(key) > 0 && (a.Item == nil || err == nil) {
			it.id = itemID(a.TableName, key)
			it.partition = it.id
			if err == nil && len(schema) > 0 {
				it.partition = a.TableName + "\x00" + schema[0] + "=" + compact(key[schema[0]])
			}
		}
		req.items = append(req.items, it)
	}
	return req, nil
}

// schemaOf is table's key attributes, learnt once.
func (cm *conflicts) schemaOf(ctx context.Context, table string) ([]string, error) {
	cm.mu.Lock()
	s, ok := cm.schemas[table]
	cm.mu.Unlock()
	if ok {
		return s, nil
	}
	s, err := cm.keySchema(ctx, table)
	if err != nil {
		log.Printf("idem-bench: conflict model: the key schema of %q: %v; its Puts are not checked", table, err)
		return nil, err
	}
	cm.mu.Lock()
	cm.schemas[table] = s
	cm.mu.Unlock()
	return s, nil
}

// itemID names an item by its table and key attributes, whatever their
// order in the request.
func itemID(table string, key map[string]json.RawMessage) string {
	names := slices.Sorted(maps.Keys(key))
	var b strings.Builder
	b.WriteString(table)
	for _, n := range names {
		fmt.Fprintf(&b, "\x00%s=%s", n, compact(key[n]))
	}
	return b.String()
}

// compact is v without insignificant space, so that equal values name one
// item however a client spaced them. A value whose map keys differ in
// order would still differ; key attributes are S, N or B, which have none.
func compact(v json.RawMessage) string {
	var b bytes.Buffer
	if json.Compact(&b, v) != nil {
		return string(v)
	}
	return b.String()
}

// errorType is an error answer's __type without its namespace, or "".
func errorType(body []byte) string {
	var e struct {
		Type string `json:"__type"`
	}
	if json.Unmarshal(body, &e) != nil {
		return ""
	}
	if i := strings.LastIndex(e.Type, "#"); i >= 0 {
		return e.Type[i+1:]
	}
	return e.Type
}
