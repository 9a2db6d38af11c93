package idem_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/idemkit/kit/idem"
	"github.com/idemkit/kit/idem/idemtest"
)

// describeAs answers DescribeTable as a global table's description would
// read (the local server has no other Regions), or with an error status
// and code; every other call goes to the server as it is.
type describeAs struct {
	table  map[string]any // merged into the description's "Table"
	status int            // an error answer, when not 0
	code   string
	calls  int
}

func (d *describeAs) RoundTrip(req *http.Request) (*http.Response, error) {
	if !strings.HasSuffix(req.Header.Get("X-Amz-Target"), ".DescribeTable") {
		return http.DefaultTransport.RoundTrip(req)
	}
	d.calls++
	if d.status != 0 {
		body := `{"__type":"com.amazonaws.dynamodb.v20120810#` + d.code + `","message":"injected"}`
		return &http.Response{StatusCode: d.status, Header: http.Header{"Content-Type": {"application/x-amz-json-1.0"}},
			Body: io.NopCloser(strings.NewReader(body)), Request: req}, nil
	}
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err != nil || resp.StatusCode != 200 {
		return resp, err
	}
	var out map[string]map[string]any
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err := json.Unmarshal(b, &out); err != nil {
		return nil, err
	}
	for k, v := range d.table {
		out["Table"][k] = v
	}
	b, _ = json.Marshal(out)
	resp.Body, resp.ContentLength = io.NopCloser(bytes.NewReader(b)), int64(len(b))
	resp.Header.Del("Content-Length")
	resp.Header.Del("X-Amz-Crc32")
	return resp, nil
}

// TestGlobalTableGuard: a Store reads its claims table's description once,
// before its first claim, and refuses to claim on a table with a replica
// in a Region other than its own, with eventual consistency, where one
// message delivered in two Regions would be applied in both: nothing is
// committed, and the error names the table, the Regions and what to do.
// DescribeTable asked in one Region lists the other Regions' replicas, and
// sometimes its own: one listed replica of another Region refuses. The
// Store's Region is the table ARN's, else the client's. Strong
// consistency, the own Region alone, and a deployment that says it writes
// in one Region claim.
func TestGlobalTableGuard(t *testing.T) {
	own := idemtest.Client(idemtest.Endpoint(t)).Options().Region // the local server's ARNs name it too
	replica := func(regions ...string) []map[string]any {
		var rs []map[string]any
		for _, r := range regions {
			rs = append(rs, map[string]any{"RegionName": r, "ReplicaStatus": "ACTIVE"})
		}
		return rs
	}
	replicas := replica(own, "eu-west-1")
	listed := func(others string) string { // the refusal's list of Regions
		return "replicated in " + own + " (this Store's Region), " + others + " with multi-Region eventual consistency"
	}
	for _, tc := range []struct {
		name       string
		describe   describeAs
		oneRegion  bool
		refused    string // a part of the refusal; "" claims
		retryable  bool   // the first delivery fails for a retry, the second claims
		wantCalls  int    // DescribeTable calls over the three deliveries
		wantCredit int
	}{
		{name: "a table of one Region", wantCalls: 1, wantCredit: 500},
		{name: "replicated, the own Region listed too", describe: describeAs{table: map[string]any{"Replicas": replicas}},
			refused: listed("eu-west-1"), wantCalls: 1},
		{name: "one other Region listed", describe: describeAs{table: map[string]any{"Replicas": replica("eu-west-1")}},
			refused: listed("eu-west-1"), wantCalls: 1},
		{name: "two other Regions listed", describe: describeAs{table: map[string]any{"Replicas": replica("eu-west-1", "us-west-2")}},
			refused: listed("eu-west-1, us-west-2"), wantCalls: 1},
		{name: "only the own Region listed", describe: describeAs{table: map[string]any{"Replicas": replica(own)}},
			wantCalls: 1, wantCredit: 500},
		{name: "no ARN: the client's Region, another listed", describe: describeAs{table: map[string]any{"TableArn": nil, "Replicas": replica("eu-west-1")}},
			refused: listed("eu-west-1"), wantCalls: 1},
		{name: "no ARN: the client's Region, alone listed", describe: describeAs{table: map[string]any{"TableArn": nil, "Replicas": replica(own)}},
			wantCalls: 1, wantCredit: 500},
		{name: "one other Region, strong consistency", describe: describeAs{table: map[string]any{"Replicas": replica("eu-west-1"), "MultiRegionConsistency": "STRONG"}},
			wantCalls: 1, wantCredit: 500},
		{name: "one other Region, written in one Region", describe: describeAs{table: map[string]any{"Replicas": replica("eu-west-1")}}, oneRegion: true,
			wantCalls: 0, wantCredit: 500},
		{name: "replicated, consistency named EVENTUAL", describe: describeAs{table: map[string]any{"Replicas": replicas, "MultiRegionConsistency": "EVENTUAL"}},
			refused: "WritesInOneRegion", wantCalls: 1},
		{name: "a legacy global table", describe: describeAs{table: map[string]any{"GlobalTableVersion": "2017.11.29"}},
			refused: "version 2017.11.29", wantCalls: 1},
		{name: "replicated, strong consistency", describe: describeAs{table: map[string]any{"Replicas": replicas, "MultiRegionConsistency": "STRONG"}},
			wantCalls: 1, wantCredit: 500},
		{name: "replicated, written in one Region", describe: describeAs{table: map[string]any{"Replicas": replicas}}, oneRegion: true,
			wantCalls: 0, wantCredit: 500},
		{name: "DescribeTable denied", describe: describeAs{status: 400, code: "AccessDeniedException"},
			refused: "grant dynamodb:DescribeTable", wantCalls: 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			d := tc.describe
			client := idemtest.Client(idemtest.Endpoint(t), func(o *dynamodb.Options) { o.HTTPClient = &http.Client{Transport: &d} })
			store, err := idem.New(client, e.processed, func(o *idem.Options) { o.WritesInOneRegion = tc.oneRegion })
			if err != nil {
				t.Fatal(err)
			}
			var errs []error
			for range 3 {
				_, err := store.Process(context.Background(), msg, e.creditHandler(nil))
				errs = append(errs, err)
			}
			var inv *idem.InvalidError
			switch {
			case tc.refused == "" && (errs[0] != nil || errs[1] != nil):
				t.Fatalf("want claims, got %v", errs)
			case tc.refused != "" && (!errors.As(errs[0], &inv) || !strings.Contains(inv.Error(), tc.refused) || !strings.Contains(inv.Error(), e.processed)):
				t.Fatalf("want an *InvalidError naming %s and saying %q, got %v", e.processed, tc.refused, errs[0])
			case tc.refused != "" && !errors.Is(errs[2], idem.ErrInvalid):
				t.Fatalf("want every delivery refused, got %v", errs)
			}
			if tc.refused != "" {
				t.Logf("refused: %v", errs[0])
			}
			if d.calls != tc.wantCalls {
				t.Errorf("want %d DescribeTable call(s) for three deliveries, got %d", tc.wantCalls, d.calls)
			}
			if got := e.balance(t, "acc-9"); got != tc.wantCredit {
				t.Errorf("want a balance of %d, got %d", tc.wantCredit, got)
			}
		})
	}
}

// TestGlobalTableGuardOnEveryClaim: a lease's claim and a batch's claims
// are refused the same way on a table written in several Regions, and a
// DescribeTable that fails for a moment fails that delivery for a retry,
// checked again on the next.
func TestGlobalTableGuardOnEveryClaim(t *testing.T) {
	e := newEnv(t)
	d := describeAs{table: map[string]any{"Replicas": []map[string]any{{"RegionName": "us-east-1"}, {"RegionName": "us-west-2"}}}}
	store, err := idem.New(idemtest.Client(idemtest.Endpoint(t), func(o *dynamodb.Options) { o.HTTPClient = &http.Client{Transport: &d} }), e.processed)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := store.ProcessLeased(ctx, msg, e.creditHandler(nil)); !errors.Is(err, idem.ErrInvalid) {
		t.Errorf("ProcessLeased: want the refusal, got %v", err)
	}
	out := store.ProcessBatch(ctx, []idem.Message{msg, {ID: "evt_002", Source: "credits"}}, func(ctx context.Context, _ int, m idem.Message) (idem.Effect, error) {
		return e.creditHandler(nil)(ctx, m)
	})
	for i, r := range out {
		if !errors.Is(r.Err, idem.ErrInvalid) {
			t.Errorf("ProcessBatch message %d: want the refusal, got %v", i, r.Err)
		}
	}
	if e.claimCount(t) != 0 || e.balance(t, "acc-9") != 0 {
		t.Errorf("nothing may be claimed or applied: %d claims, balance %d", e.claimCount(t), e.balance(t, "acc-9"))
	}

	flaky := describeAs{status: 500, code: "InternalServerError"}
	store, err = idem.New(idemtest.Client(idemtest.Endpoint(t), func(o *dynamodb.Options) { o.HTTPClient = &http.Client{Transport: &flaky} }), e.processed)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := store.Process(ctx, msg, e.creditHandler(nil)); !errors.Is(err, idem.ErrRetryable) {
		t.Fatalf("a failing DescribeTable: want a retryable failure, got %v", err)
	}
	flaky.status = 0
	if res, err := store.Process(ctx, msg, e.creditHandler(nil)); err != nil || res.Outcome != idem.Processed {
		t.Fatalf("once DescribeTable answers: want Processed, got %v %v", res.Outcome, err)
	}
}
