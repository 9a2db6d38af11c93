package main

// The DynamoDB latency model. The local server prices a TransactWriteItems
// about like a single write; DynamoDB, as published, at several (the
// report prints both ratios, measured). So every latency is also measured
// through a proxy (proxy.go) that holds each answer back until the
// request's total time follows DynamoDB's figures for its operation.
//
// The figures, and where they come from, are a JSON file: -model FILE.
// The default is model-published.json beside this file (embedded in the
// binary), which holds the only published figures found and names their
// source. A file of one's own measurements has the same shape:
//
//	{
//	  "source": "ours: 1,000 calls from Lambda in eu-west-1, November 2026",
//	  "figures": [
//	    {"operation": "PutItem", "p50Ms": 6.1, "p99Ms": 14},
//	    {"operation": "GetItem", "p50Ms": 4.2, "p99Ms": 9.5},
//	    {"operation": "TransactWriteItems", "items": 2, "p50Ms": 19, "p99Ms": 61},
//	    {"operation": "TransactWriteItems", "cancelled": true, "items": 2, "p50Ms": 18, "p99Ms": 55}
//	  ]
//	}
//
// Each figure is an operation's p50 and p99 in milliseconds; a request's
// total time is drawn from the lognormal distribution through those two
// quantiles (p50 == p99 makes it constant). The rules:
//
//   - operation is one of modelled: PutItem is required, and GetItem,
//     UpdateItem and DeleteItem take PutItem's figures unless given (none
//     is published for them); every other operation (CreateTable,
//     DescribeTable, Query, streams, …) passes through undelayed.
//   - TransactWriteItems (required) and BatchWriteItem are given by items,
//     the request's actions or put and delete requests, one figure or more:
//     one holds at every count; several are joined by straight lines,
//     extended the same way below the first and beyond the last, but
//     never below PutItem's figures.
//   - "cancelled": true marks a TransactWriteItems cancelled by a failing
//     condition (the server answers 400 TransactionCanceledException);
//     without such a figure a cancelled one costs what a committed one
//     does. BatchWriteItem defaults to PutItem's figures.

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"slices"
	"strings"
	"time"
)

//go:embed model-published.json
var publishedModel []byte

// modelOff and modelPublished are -model's two names that are not files.
const (
	modelOff       = "off"
	modelPublished = "published"
)

// modelled are the operations the model delays, those by items first.
var modelled = []string{"TransactWriteItems", "BatchWriteItem", "PutItem", "GetItem", "UpdateItem", "DeleteItem"}

func byItems(op string) bool { return op == "TransactWriteItems" || op == "BatchWriteItem" }

// modelFile is the JSON shape of -model's file.
type modelFile struct {
	Source  string   `json:"source"`
	Figures []figure `json:"figures"`
}

type figure struct {
	Operation string  `json:"operation"`
	Items     int     `json:"items,omitempty"`
	Cancelled bool    `json:"cancelled,omitempty"`
	P50Ms     float64 `json:"p50Ms"`
	P99Ms     float64 `json:"p99Ms"`
}

// series names one line of figures: an operation, cancelled or not.
type series struct {
	op        string
	cancelled bool
}

// model is a loaded -model file.
type model struct {
	name, source string
	figures      []figure            // as the file gives them, for the report
	lines        map[series][]figure // sorted by items
}

// loadModel reads -model's value: a file, or modelPublished for the
// embedded figures.
func loadModel(path string) (*model, error) {
	if path == modelPublished {
		return parseModel("model-published.json", publishedModel)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("-model: %w", err)
	}
	return parseModel(path, b)
}

// parseModel checks a model file and says what is wrong, naming the
// figure, as a user's own file is written by hand.
func parseModel(name string, b []byte) (*model, error) {
	fail := func(format string, args ...any) (*model, error) {
		return nil, fmt.Errorf("-model %s: "+format, append([]any{name}, args...)...)
	}
	var f modelFile
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&f); err != nil {
		return fail("not a model file (see model.go for its format): %v", err)
	}
	if strings.TrimSpace(f.Source) == "" {
		return fail(`"source" is empty: say where the figures come from, as the report prints it`)
	}
	m := &model{name: name, source: f.Source, figures: f.Figures, lines: map[series][]figure{}}
	for i, g := range f.Figures {
		at := fmt.Sprintf("figures[%d] (%s)", i, g.Operation)
		switch {
		case !slices.Contains(modelled, g.Operation):
			return fail("figures[%d]: operation %q is not one the model delays (%s); others pass through undelayed", i, g.Operation, strings.Join(modelled, ", "))
		case !(g.P50Ms > 0):
			return fail("%s: p50Ms must be a positive number of milliseconds, got %v", at, g.P50Ms)
		case g.P99Ms < g.P50Ms:
			return fail("%s: p99Ms %v is below p50Ms %v", at, g.P99Ms, g.P50Ms)
		case byItems(g.Operation) && g.Items < 1:
			return fail(`%s: "items" must be 1 or more: the request's actions or put and delete requests`, at)
		case !byItems(g.Operation) && g.Items != 0:
			return fail(`%s: "items" is only for TransactWriteItems and BatchWriteItem`, at)
		case g.Cancelled && g.Operation != "TransactWriteItems":
			return fail(`%s: "cancelled" is only for TransactWriteItems`, at)
		}
		k := series{g.Operation, g.Cancelled}
		if slices.ContainsFunc(m.lines[k], func(h figure) bool { return h.Items == g.Items }) {
			return fail("%s: a second figure for the same operation and items", at)
		}
		m.lines[k] = append(m.lines[k], g)
	}
	for _, op := range []string{"PutItem", "TransactWriteItems"} {
		if len(m.lines[series{op, false}]) == 0 {
			return fail("no figure for %s, which the model needs", op)
		}
	}
	for _, l := range m.lines {
		slices.SortFunc(l, func(a, b figure) int { return a.Items - b.Items })
	}
	return m, nil
}

// quantiles are a request's p50 and p99 total time in milliseconds.
type quantiles struct{ p50, p99 float64 }

// lookup is the model's p50 and p99 for a request; ok is false for an
// operation that passes through undelayed.
func (m *model) lookup(op string, items int, cancelled bool) (q quantiles, ok bool) {
	if !slices.Contains(modelled, op) {
		return q, false
	}
	put := m.lines[series{"PutItem", false}][0]
	line := m.lines[series{op, cancelled}]
	if line == nil {
		line = m.lines[series{op, false}]
	}
	if line == nil {
		line = m.lines[series{"PutItem", false}]
	}
	q = along(line, items)
	if byItems(op) {
		q.p50, q.p99 = max(q.p50, put.P50Ms), max(q.p99, put.P99Ms)
		q.p99 = max(q.p99, q.p50) // a line extended far may cross
	}
	return q, true
}

// along is the figure at items on line: one figure holds everywhere;
// otherwise the straight line through the two nearest.
func along(line []figure, items int) quantiles {
	if len(line) == 1 {
		return quantiles{line[0].P50Ms, line[0].P99Ms}
	}
	i := 1
	for i < len(line)-1 && line[i].Items < items {
		i++
	}
	a, b := line[i-1], line[i]
	t := float64(items-a.Items) / float64(b.Items-a.Items)
	return quantiles{a.P50Ms + t*(b.P50Ms-a.P50Ms), a.P99Ms + t*(b.P99Ms-a.P99Ms)}
}

// z99 is the standard normal's 0.99 quantile: a lognormal's p99 is
// exp(mu + z99 sigma), its p50 exp(mu).
const z99 = 2.3263478740408408

// draw turns a standard normal variate into a total time: lognormal with
// mu = ln p50 and sigma = ln(p99/p50) / z99.
func (q quantiles) draw(normal float64) time.Duration {
	sigma := math.Log(q.p99/q.p50) / z99
	ms := q.p50 * math.Exp(sigma*normal)
	return time.Duration(ms * float64(time.Millisecond))
}

// mean is the lognormal's mean in milliseconds: p50 · exp(sigma² / 2).
func (q quantiles) mean() float64 {
	sigma := math.Log(q.p99/q.p50) / z99
	return q.p50 * math.Exp(sigma*sigma/2)
}

// describe lists the file's figures for the report: "PutItem 7.55 / 16.2
// ms, TransactWriteItems of 5 items 25.3 / 92.5 ms, …".
func (m *model) describe() string {
	var parts []string
	for _, g := range m.figures {
		s := g.Operation
		if g.Cancelled {
			s += " cancelled"
		}
		if g.Items > 0 {
			s += fmt.Sprintf(" of %d", g.Items)
		}
		parts = append(parts, fmt.Sprintf("%s %g / %g ms", s, g.P50Ms, g.P99Ms))
	}
	return strings.Join(parts, ", ")
}
