package main

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemkit/kit/idem/idemtest"
)

func TestMain(m *testing.M) { idemtest.Main(m) }

// testModel has round figures of its own, so that the rules are checked
// without restating the published ones.
const testModel = `{"source": "test", "figures": [
	{"operation": "PutItem", "p50Ms": 10, "p99Ms": 20},
	{"operation": "GetItem", "p50Ms": 4, "p99Ms": 8},
	{"operation": "TransactWriteItems", "items": 5, "p50Ms": 30, "p99Ms": 90},
	{"operation": "TransactWriteItems", "items": 25, "p50Ms": 50, "p99Ms": 110},
	{"operation": "TransactWriteItems", "cancelled": true, "items": 5, "p50Ms": 28, "p99Ms": 80}
]}`

func TestModelLookup(t *testing.T) {
	m, err := parseModel("test", []byte(testModel))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name      string
		op        string
		items     int
		cancelled bool
		want      quantiles
		undelayed bool
	}{
		{name: "PutItem", op: "PutItem", items: 1, want: quantiles{10, 20}},
		{name: "UpdateItem takes PutItem's", op: "UpdateItem", items: 1, want: quantiles{10, 20}},
		{name: "DeleteItem takes PutItem's", op: "DeleteItem", items: 1, want: quantiles{10, 20}},
		{name: "GetItem given its own", op: "GetItem", items: 1, want: quantiles{4, 8}},
		{name: "transaction at a figure", op: "TransactWriteItems", items: 5, want: quantiles{30, 90}},
		{name: "transaction between figures", op: "TransactWriteItems", items: 15, want: quantiles{40, 100}},
		{name: "transaction below the first, the same line", op: "TransactWriteItems", items: 2, want: quantiles{27, 87}},
		{name: "transaction beyond the last, the same line", op: "TransactWriteItems", items: 45, want: quantiles{70, 130}},
		{name: "cancelled, one figure holds at every count", op: "TransactWriteItems", items: 2, cancelled: true, want: quantiles{28, 80}},
		{name: "BatchWriteItem without figures takes PutItem's", op: "BatchWriteItem", items: 5, want: quantiles{10, 20}},
		{name: "other operations pass through", op: "Query", items: 1, undelayed: true},
		{name: "streams pass through", op: "GetRecords", items: 1, undelayed: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := m.lookup(tc.op, tc.items, tc.cancelled)
			if ok == tc.undelayed {
				t.Fatalf("expect modelled %v, got %v", !tc.undelayed, ok)
			}
			if !tc.undelayed && (math.Abs(got.p50-tc.want.p50) > 1e-9 || math.Abs(got.p99-tc.want.p99) > 1e-9) {
				t.Errorf("expect %v, got %v", tc.want, got)
			}
		})
	}
	t.Run("never below PutItem's", func(t *testing.T) {
		m, err := parseModel("test", []byte(`{"source": "test", "figures": [
			{"operation": "PutItem", "p50Ms": 10, "p99Ms": 20},
			{"operation": "TransactWriteItems", "items": 5, "p50Ms": 12, "p99Ms": 30},
			{"operation": "TransactWriteItems", "items": 6, "p50Ms": 14, "p99Ms": 40}]}`))
		if err != nil {
			t.Fatal(err)
		}
		if got, _ := m.lookup("TransactWriteItems", 1, false); got != (quantiles{10, 20}) {
			t.Errorf("expect PutItem's {10 20}, got %v", got)
		}
	})
}

// TestDraw: the lognormal through p50 and p99 has them as its quantiles.
func TestDraw(t *testing.T) {
	q := quantiles{7, 21}
	if got := q.draw(0); got != 7*time.Millisecond {
		t.Errorf("p50: expect 7ms, got %v", got)
	}
	if got := q.draw(z99); got.Round(time.Microsecond) != 21*time.Millisecond {
		t.Errorf("p99: expect 21ms, got %v", got)
	}
	if got := (quantiles{5, 5}).draw(3); got != 5*time.Millisecond {
		t.Errorf("p50 == p99: expect 5ms always, got %v", got)
	}
}

func TestPublishedModel(t *testing.T) {
	m, err := loadModel(modelPublished)
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range m.figures {
		if got, _ := m.lookup(g.Operation, max(g.Items, 1), g.Cancelled); got != (quantiles{g.P50Ms, g.P99Ms}) {
			t.Errorf("%+v: expect the model to give the figure back, got %v", g, got)
		}
	}
}

// TestBadModelFile: a file written by hand gets an error that names what
// is wrong.
func TestBadModelFile(t *testing.T) {
	const put = `{"operation": "PutItem", "p50Ms": 7, "p99Ms": 16}`
	const tx = `{"operation": "TransactWriteItems", "items": 5, "p50Ms": 25, "p99Ms": 92}`
	file := func(figures ...string) string {
		return `{"source": "test", "figures": [` + strings.Join(figures, ",") + `]}`
	}
	for _, tc := range []struct {
		name, body, want string
	}{
		{"not JSON", `p50: 7`, "not a model file"},
		{"unknown field", `{"source": "test", "figure": []}`, `unknown field "figure"`},
		{"misspelt field", file(put, tx, `{"operation": "GetItem", "p50": 4, "p99Ms": 9}`), `unknown field "p50"`},
		{"no source", `{"figures": [` + put + `,` + tx + `]}`, `"source" is empty`},
		{"unknown operation", file(put, tx, `{"operation": "Query", "p50Ms": 4, "p99Ms": 9}`), `operation "Query" is not one the model delays`},
		{"p99 below p50", file(`{"operation": "PutItem", "p50Ms": 16, "p99Ms": 7}`, tx), "figures[0] (PutItem): p99Ms 7 is below p50Ms 16"},
		{"zero p50", file(`{"operation": "PutItem", "p99Ms": 7}`, tx), "figures[0] (PutItem): p50Ms must be a positive"},
		{"transaction without items", file(put, `{"operation": "TransactWriteItems", "p50Ms": 25, "p99Ms": 92}`), `figures[1] (TransactWriteItems): "items" must be 1 or more`},
		{"items on a single write", file(`{"operation": "PutItem", "items": 2, "p50Ms": 7, "p99Ms": 16}`, tx), `"items" is only for`},
		{"cancelled PutItem", file(`{"operation": "PutItem", "cancelled": true, "p50Ms": 7, "p99Ms": 16}`, put, tx), `"cancelled" is only for TransactWriteItems`},
		{"the same figure twice", file(put, tx, tx), "figures[2] (TransactWriteItems): a second figure"},
		{"no PutItem", file(tx), "no figure for PutItem"},
		{"no TransactWriteItems", file(put), "no figure for TransactWriteItems"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "mine.json")
			if err := os.WriteFile(path, []byte(tc.body), 0o644); err != nil {
				t.Fatal(err)
			}
			_, err := loadModel(path)
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), path) {
				t.Errorf("expect an error naming %s and saying %q, got %v", path, tc.want, err)
			}
		})
	}
	t.Run("no such file", func(t *testing.T) {
		if _, err := loadModel("no-such-model.json"); err == nil || !strings.Contains(err.Error(), "no-such-model.json") {
			t.Errorf("expect an error naming the file, got %v", err)
		}
	})
}

func TestCountItems(t *testing.T) {
	for _, tc := range []struct {
		op, body string
		want     int
	}{
		{"TransactWriteItems", `{"TransactItems": [{"Put": {}}, {"Update": {}}]}`, 2},
		{"BatchWriteItem", `{"RequestItems": {"a": [{}, {}], "b": [{}, {}, {}]}}`, 5},
		{"PutItem", `{"TableName": "a"}`, 1},
		{"TransactWriteItems", `not JSON`, 1},
	} {
		t.Run(tc.op, func(t *testing.T) {
			if got := countItems(tc.op, []byte(tc.body)); got != tc.want {
				t.Errorf("expect %d, got %d", tc.want, got)
			}
		})
	}
}

// proxied starts a proxy with m in front of the local server, and a client
// through it.
func proxied(t *testing.T, m *model) (*modelProxy, *dynamodb.Client) {
	t.Helper()
	p, err := startProxy(m, idemtest.Endpoint(t), 1)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p, idemtest.Client(p.URL)
}

// within says whether got is within 10% of want milliseconds.
func within(got time.Duration, want float64) bool {
	ms := float64(got) / float64(time.Millisecond)
	return ms >= 0.9*want && ms <= 1.1*want
}

// TestProxyFollowsModel: PutItems and 2-action transactions through the
// proxy are held to totals drawn from the published model: the draws'
// p50 and p99 are the model's (the seed fixes them), and no answer comes
// back before its drawn total. Nothing is timed from above: a busy
// machine only adds, and what it adds is the bench's to measure.
func TestProxyFollowsModel(t *testing.T) {
	if testing.Short() {
		t.Skip("about 12 s of requests through the proxy")
	}
	m, err := loadModel(modelPublished)
	if err != nil {
		t.Fatal(err)
	}
	p, c := proxied(t, m)
	var mu sync.Mutex
	drawn := map[string][]time.Duration{}
	p.drawn = func(class string, total time.Duration) {
		mu.Lock()
		drawn[class] = append(drawn[class], total)
		mu.Unlock()
	}
	ctx := context.Background()
	claims := idemtest.CreateTable(t, c, idemtest.Table{Name: "model-claims", HashKey: "pk"})
	accounts := idemtest.CreateTable(t, c, idemtest.Table{Name: "model-accounts", HashKey: "account"})
	// One at a time, so that draw i is request i's.
	const n = 300
	var puts, txs []time.Duration
	for i := range n {
		start := time.Now()
		if _, err := c.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(claims), Item: map[string]types.AttributeValue{"pk": s(fmt.Sprint("put-", i))}}); err != nil {
			t.Fatal(err)
		}
		puts = append(puts, time.Since(start))
		start = time.Now()
		if _, err := c.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
			{Put: &types.Put{TableName: aws.String(claims), Item: map[string]types.AttributeValue{"pk": s(fmt.Sprint("tx-", i))}}},
			{Update: creditUpdate(accounts, message{account: "a", cents: 1})},
		}}); err != nil {
			t.Fatal(err)
		}
		txs = append(txs, time.Since(start))
	}
	for _, tc := range []struct {
		name  string
		took  []time.Duration
		op    string
		items int
	}{
		{"PutItem", puts, "PutItem", 1},
		{"TransactWriteItems of 2 actions", txs, "TransactWriteItems", 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want, _ := m.lookup(tc.op, tc.items, false)
			d := drawn[tc.op]
			if len(d) != n {
				t.Fatalf("want %d draws, got %d", n, len(d))
			}
			p50, p99 := percentile(d, 0.5), percentile(d, 0.99)
			t.Logf("drawn p50 %v, p99 %v; the model's %.2f / %.2f ms; measured p50 %v", p50, p99, want.p50, want.p99, percentile(tc.took, 0.5))
			if !within(p50, want.p50) || !within(p99, want.p99) {
				t.Errorf("draws: expect p50 and p99 within 10%% of %.2f / %.2f ms, got %v / %v", want.p50, want.p99, p50, p99)
			}
			for i := range d {
				if tc.took[i] < d[i] {
					t.Fatalf("request %d answered after %v, before its drawn %v", i, tc.took[i], d[i])
				}
			}
		})
	}
}

// TestProxyConcurrent: requests at once through the proxy take about one
// delay together, not one each.
func TestProxyConcurrent(t *testing.T) {
	const delay = 200 * time.Millisecond
	m, err := parseModel("constant", fmt.Appendf(nil, `{"source": "test", "figures": [
		{"operation": "PutItem", "p50Ms": %[1]d, "p99Ms": %[1]d},
		{"operation": "TransactWriteItems", "items": 1, "p50Ms": %[1]d, "p99Ms": %[1]d}]}`, delay.Milliseconds()))
	if err != nil {
		t.Fatal(err)
	}
	_, c := proxied(t, m)
	table := idemtest.CreateTable(t, c, idemtest.Table{Name: "model-concurrent", HashKey: "pk"})
	const n = 10
	errs := make(chan error, n)
	took := make(chan time.Duration, n)
	var wg sync.WaitGroup
	start := time.Now()
	for i := range n {
		wg.Go(func() {
			t0 := time.Now()
			_, err := c.PutItem(context.Background(), &dynamodb.PutItemInput{TableName: aws.String(table), Item: map[string]types.AttributeValue{"pk": s(fmt.Sprint(i))}})
			errs <- err
			took <- time.Since(t0)
		})
	}
	wg.Wait()
	all := time.Since(start)
	close(errs)
	close(took)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	for d := range took {
		if d < delay {
			t.Errorf("expect every request to take the model's %v, one took %v", delay, d)
		}
	}
	// One after another they would take n × delay; the bound leaves a
	// busy machine room, not a serialized proxy.
	if all >= n*delay*3/4 {
		t.Errorf("expect %d requests at once to take about %v together, not %v each; got %v", n, delay, delay, all)
	}
}

// TestProxyCancelled: a transaction cancelled by its condition is told
// from a committed one, and a table's creation passes through undelayed.
func TestProxyCancelled(t *testing.T) {
	m, err := parseModel("test", []byte(testModel))
	if err != nil {
		t.Fatal(err)
	}
	p, c := proxied(t, m)
	table := idemtest.CreateTable(t, c, idemtest.Table{Name: "model-cancelled", HashKey: "pk"})
	// A new input each time: the SDK fills in a ClientRequestToken, and
	// the same token again is a replay of the commit, not a new claim.
	claim := func() *dynamodb.TransactWriteItemsInput {
		return &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{{Put: &types.Put{
			TableName: aws.String(table), Item: map[string]types.AttributeValue{"pk": s("m-1")},
			ConditionExpression: aws.String("attribute_not_exists(pk)"),
		}}}}
	}
	if _, err := c.TransactWriteItems(context.Background(), claim()); err != nil {
		t.Fatal(err)
	}
	var tce *types.TransactionCanceledException
	if _, err := c.TransactWriteItems(context.Background(), claim()); !errors.As(err, &tce) {
		t.Fatalf("expect the second claim cancelled, got %v", err)
	}
	got := p.Counts()
	for _, tc := range []struct {
		class   string
		want    int
		atLeast bool // the SDK's waiter describes the table until it is active
	}{
		{"TransactWriteItems", 1, false},
		{"TransactWriteItems (cancelled)", 1, false},
		{"undelayed: DynamoDB_20120810.CreateTable", 1, false},
		{"undelayed: DynamoDB_20120810.DescribeTable", 1, true},
	} {
		if n := got[tc.class]; n != tc.want && !(tc.atLeast && n > tc.want) {
			t.Errorf("%s: expect %d, got %d (all: %v)", tc.class, tc.want, n, got)
		}
	}
}

// TestProxyCommitsLate: a transaction's writes reach the local server
// late in its drawn time, so a read sent after it, and answered before
// its time is up, does not see them; once it has answered, a read does.
func TestProxyCommitsLate(t *testing.T) {
	m, err := parseModel("slow transactions", []byte(`{"source": "test", "figures": [
		{"operation": "PutItem", "p50Ms": 2, "p99Ms": 2},
		{"operation": "TransactWriteItems", "items": 1, "p50Ms": 300, "p99Ms": 300}]}`))
	if err != nil {
		t.Fatal(err)
	}
	_, c := proxied(t, m)
	table := idemtest.CreateTable(t, c, idemtest.Table{Name: "model-late", HashKey: "pk"})
	ctx := context.Background()
	done := make(chan error, 1)
	go func() {
		_, err := c.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{{Put: &types.Put{
			TableName: aws.String(table), Item: map[string]types.AttributeValue{"pk": s("x")},
		}}}})
		done <- err
	}()
	time.Sleep(30 * time.Millisecond)
	read := func() bool {
		out, err := c.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(table), Key: map[string]types.AttributeValue{"pk": s("x")}, ConsistentRead: aws.Bool(true)})
		if err != nil {
			t.Fatal(err)
		}
		return out.Item != nil
	}
	if read() {
		t.Error("a read 30 ms into a 300 ms transaction: expect its write not yet visible, got it")
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if !read() {
		t.Error("a read after the transaction answered: expect its write, got none")
	}
}

// TestProxyReadsFirst: a transaction that reaches the proxy while a read
// sent before it is still with the server is forwarded after the read
// is answered, however slow the server is; the upstream here is a
// stand-in that records when each request reached it and holds a
// GetItem 100 ms, as no local server does on demand.
func TestProxyReadsFirst(t *testing.T) {
	var mu sync.Mutex
	var readAnswered, txArrived time.Time
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.Header.Get("X-Amz-Target") {
		case dynamoTarget + "GetItem":
			time.Sleep(100 * time.Millisecond)
			mu.Lock()
			readAnswered = time.Now()
			mu.Unlock()
		case dynamoTarget + "TransactWriteItems":
			mu.Lock()
			txArrived = time.Now()
			mu.Unlock()
		}
		w.Write([]byte("{}"))
	}))
	defer upstream.Close()
	m, err := parseModel("fast", []byte(`{"source": "test", "figures": [
		{"operation": "PutItem", "p50Ms": 1, "p99Ms": 1},
		{"operation": "TransactWriteItems", "items": 1, "p50Ms": 1, "p99Ms": 1}]}`))
	if err != nil {
		t.Fatal(err)
	}
	p, err := startProxy(m, upstream.URL, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	post := func(op string) error {
		req, err := http.NewRequest(http.MethodPost, p.URL, strings.NewReader(`{"TransactItems": [{}]}`))
		if err != nil {
			return err
		}
		req.Header.Set("X-Amz-Target", dynamoTarget+op)
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
		}
		return err
	}
	errs := make(chan error, 1)
	go func() { errs <- post("GetItem") }()
	time.Sleep(20 * time.Millisecond)
	if err := post("TransactWriteItems"); err != nil {
		t.Fatal(err)
	}
	if err := <-errs; err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if txArrived.Before(readAnswered) {
		t.Errorf("expect the transaction to reach the server after the read sent before it was answered; it came %v before", readAnswered.Sub(txArrived))
	}
}
