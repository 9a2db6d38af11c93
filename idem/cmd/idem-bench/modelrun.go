package main

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemkit/kit/idem/idemtest"
)

// server is an endpoint every latency is measured on: the local server,
// then, unless -model off, the model in front of it. The sections take
// turns between them as between strategies.
type server struct{ name, endpoint string }

// opCost is one operation's latency on one server.
type opCost struct{ p50, p99 time.Duration }

// txRatio is what a PutItem and a 2-action TransactWriteItems (the kit's
// claim and one credit) take on one server.
type txRatio struct{ put, tx opCost }

// measureRatio times n PutItems and n 2-action transactions on each
// server, taking turns: the local server's transaction costs about what
// its single write does, DynamoDB's several times more.
func measureRatio(ctx context.Context, servers []server, n int) ([]txRatio, error) {
	type tables struct {
		c                *dynamodb.Client
		claims, accounts string
	}
	var ts []tables
	for _, sv := range servers {
		t := tables{c: idemtest.Client(sv.endpoint)}
		var err error
		if t.claims, err = idemtest.CreateTableContext(ctx, t.c, idemtest.Table{Name: "bench-ratio-claims", HashKey: "pk"}); err != nil {
			return nil, err
		}
		if t.accounts, err = idemtest.CreateTableContext(ctx, t.c, idemtest.Table{Name: "bench-ratio-accounts", HashKey: "account"}); err != nil {
			return nil, err
		}
		ts = append(ts, t)
	}
	puts, txs := make([][]time.Duration, len(ts)), make([][]time.Duration, len(ts))
	for i := range n {
		for j, t := range ts {
			start := time.Now()
			if _, err := t.c.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(t.claims), Item: map[string]types.AttributeValue{"pk": s(fmt.Sprint("put-", i))}}); err != nil {
				return nil, err
			}
			puts[j] = append(puts[j], time.Since(start))
			start = time.Now()
			if _, err := t.c.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
				{Put: &types.Put{TableName: aws.String(t.claims), Item: map[string]types.AttributeValue{"pk": s(fmt.Sprint("tx-", i))}}},
				{Update: creditUpdate(t.accounts, message{account: fmt.Sprint("acc-", i%10), cents: 1})},
			}}); err != nil {
				return nil, err
			}
			txs[j] = append(txs[j], time.Since(start))
		}
	}
	out := make([]txRatio, len(ts))
	for j := range ts {
		out[j] = txRatio{opCost{percentile(puts[j], 0.5), percentile(puts[j], 0.99)}, opCost{percentile(txs[j], 0.5), percentile(txs[j], 0.99)}}
	}
	return out, nil
}

// sideBySide is a table's cells for figures measured on every server:
// each figure's cells adjacent, one per server, cell(figure, server).
func sideBySide(figures, servers int, cell func(f, j int) string) string {
	var cells []string
	for f := range figures {
		for j := range servers {
			cells = append(cells, cell(f, j))
		}
	}
	return strings.Join(cells, " | ")
}

// latencyHeader is a latency table's header cells and separator after
// the first column, each figure named once per server: "first p50 ms,
// local | first p50 ms, model |".
func (r report) latencyHeader(figures ...string) (head, rule string) {
	head = sideBySide(len(figures), len(r.servers), func(f, j int) string { return figures[f] + ", " + r.servers[j].name }) + " |"
	return head, strings.Repeat("---|", len(figures)*len(r.servers))
}

// modelSection says where every latency was measured, once for the whole
// report: on the local server, and through the model, with the model's
// source and its measured price of a transaction beside the local
// server's.
func (r report) modelSection(p func(string, ...any)) {
	if len(r.ratios) == 0 {
		return
	}
	local := r.ratios[0]
	if r.model == nil {
		published, err := loadModel(modelPublished)
		if err != nil {
			panic(err) // embedded, and checked by TestPublishedModel
		}
		put, _ := published.lookup("PutItem", 1, false)
		tx, _ := published.lookup("TransactWriteItems", 2, false)
		p("Latency is the local server's alone in this run (`-model off`). It prices a 2-action `TransactWriteItems` at %.1f× a `PutItem` at p50, where DynamoDB's published figures (model-published.json) make it %.1f×: no latency claim holds from these figures alone.\n\n", ratio(local.tx.p50, local.put.p50), tx.p50/put.p50)
		return
	}
	p("## Local server and DynamoDB latency model\n\n")
	p("Every latency below is measured twice in one run, taking turns: on the local server (**local**), and through idem-bench's DynamoDB latency model (**model**, `model.go`, `proxy.go`): a reverse proxy on 127.0.0.1 in front of the same server that holds each answer back until the request's total time is drawn from a lognormal distribution through its operation's p50 and p99, less the time the local server took. A `TransactWriteItems` is also held before it reaches the local server, until its drawn time less the server's recent 90th percentile for one and until every `GetItem` that reached the proxy before it has been served: the local server commits a transaction the moment it arrives, DynamoDB at the end of its time, and a read sent beside a transaction should not see its writes sooner than on DynamoDB. ")
	p("The figures (from %s, seed %d): %s. Their source: %s. ", r.model.name, r.seed, r.model.describe(), r.model.source)
	p("`GetItem`, `UpdateItem` and `DeleteItem` take `PutItem`'s figures unless the file gives their own (none is published); a transaction's figures are interpolated by its action count (below the first figure, the same line, never below `PutItem`'s); a transaction the server cancels (400 `TransactionCanceledException`) takes the cancelled figures; other operations pass through undelayed. ")
	p("The local server prices a transaction about like a single write, which is why no latency claim rests on the local column alone; the model's column carries DynamoDB's published price of a transaction, not its network or its throughput. The local server answers one request at a time, so under concurrency a model figure is at least the local server's queue. Requests through the model in this run: %s.\n\n", r.proxyCounts())
	p("| %d of each, taking turns | PutItem p50 ms | PutItem p99 ms | TransactWriteItems, 2 actions, p50 ms | p99 ms | transaction / PutItem, p50 | p99 |\n|---|---|---|---|---|---|---|\n", r.ratioN)
	for j, x := range r.ratios {
		p("| %s | %s | %s | %s | %s | %.2f× | %.2f× |\n", r.servers[j].name, ms(x.put.p50), ms(x.put.p99), ms(x.tx.p50), ms(x.tx.p99), ratio(x.tx.p50, x.put.p50), ratio(x.tx.p99, x.put.p99))
	}
	put, _ := r.model.lookup("PutItem", 1, false)
	tx, _ := r.model.lookup("TransactWriteItems", 2, false)
	p("| the model's figures | %.2f | %.2f | %.2f | %.2f | %.2f× | %.2f× |\n\n", put.p50, put.p99, tx.p50, tx.p99, tx.p50/put.p50, tx.p99/put.p99)
	p("Through the model, the client's own time (the SDK, the loopback connection, a busy machine's scheduling) comes on top of the drawn time.\n\n")
}

func ratio(a, b time.Duration) float64 { return float64(a) / float64(b) }

// proxyCounts lists the requests the proxy saw: those it delayed, by
// class, and those it passed through.
func (r report) proxyCounts() string {
	var delayed, passed []string
	for _, k := range slices.Sorted(maps.Keys(r.counts)) {
		if op, ok := strings.CutPrefix(k, "undelayed: "); ok {
			passed = append(passed, fmt.Sprintf("%s %d", strings.TrimPrefix(op, dynamoTarget), r.counts[k]))
		} else {
			delayed = append(delayed, fmt.Sprintf("%s %d", k, r.counts[k]))
		}
	}
	return fmt.Sprintf("delayed, %s; passed through, %s", strings.Join(delayed, ", "), strings.Join(passed, ", "))
}
