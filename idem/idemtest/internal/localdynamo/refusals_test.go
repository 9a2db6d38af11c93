package localdynamo_test

// Part of the conformance test: requests DynamoDB refuses before it writes
// anything, answered with DynamoDB's error code and status, with the tables
// left as they were. Like the rest, it runs against the server
// AWS_ENDPOINT_URL_DYNAMODB names when set, so only codes are asserted:
// DynamoDB's messages are not the local server's to promise.

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"
)

// A refusal is one request and the error code DynamoDB answers it with.
type refusal struct {
	name string
	code string
	call func(ctx context.Context) error
}

// runRefusals sends each request and checks its refusal, and that tables
// are still empty after it.
func runRefusals(t *testing.T, c *dynamodb.Client, tables []string, cases []refusal) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			wantRefused(t, tc.call(context.Background()), tc.code)
			wantEmpty(t, c, tables...)
		})
	}
}

// wantRefused checks err is DynamoDB's code with a client error status.
func wantRefused(t *testing.T, err error, code string) {
	t.Helper()
	if err == nil {
		t.Errorf("want %s, got success", code)
		return
	}
	var apiErr smithy.APIError
	if !errors.As(err, &apiErr) {
		t.Errorf("want %s, got %v", code, err)
		return
	}
	if apiErr.ErrorCode() != code {
		t.Errorf("want %s, got %s: %s", code, apiErr.ErrorCode(), apiErr.ErrorMessage())
	}
	var status interface{ HTTPStatusCode() int }
	if errors.As(err, &status) && status.HTTPStatusCode() != http.StatusBadRequest {
		t.Errorf("want status 400, got %d", status.HTTPStatusCode())
	}
}

// wantEmpty checks the refused request wrote nothing to tables, and
// empties them for the next case.
func wantEmpty(t *testing.T, c *dynamodb.Client, tables ...string) {
	t.Helper()
	ctx := context.Background()
	for _, table := range tables {
		found := 0
		pages := dynamodb.NewScanPaginator(c, &dynamodb.ScanInput{TableName: aws.String(table), ConsistentRead: aws.Bool(true)})
		for pages.HasMorePages() {
			page, err := pages.NextPage(ctx)
			if err != nil {
				t.Fatalf("scan %s: %v", table, err)
			}
			found += len(page.Items)
			for _, item := range page.Items {
				_, _ = c.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String(table), Key: map[string]types.AttributeValue{"pk": item["pk"]}})
			}
		}
		if found != 0 {
			t.Errorf("%s: the refused request wrote %d item(s)", table, found)
		}
	}
}

// rawCall sends a request the SDK's types cannot express, signed as the
// SDK signs, and returns its error as the SDK would.
func rawCall(ctx context.Context, c *dynamodb.Client, op, body string) error {
	o := c.Options()
	creds, err := o.Credentials.Retrieve(ctx)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimSuffix(aws.ToString(o.BaseEndpoint), "/")+"/", strings.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/x-amz-json-1.0")
	req.Header.Set("X-Amz-Target", "DynamoDB_20120810."+op)
	sum := sha256.Sum256([]byte(body))
	if err := v4.NewSigner().SignHTTP(ctx, creds, req, hex.EncodeToString(sum[:]), "dynamodb", o.Region, time.Now()); err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	var buf bytes.Buffer
	_, _ = buf.ReadFrom(resp.Body)
	if resp.StatusCode == http.StatusOK {
		return nil
	}
	var e struct {
		Type    string `json:"__type"`
		Message string `json:"message"`
	}
	if resp.StatusCode != http.StatusBadRequest || json.Unmarshal(buf.Bytes(), &e) != nil {
		return fmt.Errorf("status %d: %.200s", resp.StatusCode, buf.String())
	}
	return &smithy.GenericAPIError{Code: e.Type[strings.LastIndex(e.Type, "#")+1:], Message: e.Message}
}

func ss(v ...string) types.AttributeValue { return &types.AttributeValueMemberSS{Value: v} }

// missingTable names a table no test creates.
func missingTable() string { return fmt.Sprintf("localdynamo-missing-%d", time.Now().UnixNano()) }

func TestRefusesTransactions(t *testing.T) {
	c := idemClient(t)
	tbl := newTable(t, c, "refuse-tx")
	put := func(id string, attrs ...types.AttributeValue) types.TransactWriteItem {
		item := map[string]types.AttributeValue{"pk": s(id)}
		if len(attrs) > 0 {
			item["v"] = attrs[0]
		}
		return types.TransactWriteItem{Put: &types.Put{TableName: aws.String(tbl), Item: item}}
	}
	write := func(ctx context.Context, items ...types.TransactWriteItem) error {
		_, err := c.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: items})
		return err
	}
	big := strings.Repeat("x", 390_000)
	var overFourMB []types.TransactWriteItem
	for i := range 11 { // 11 items of 390 KB: 4.3 MB
		overFourMB = append(overFourMB, put(fmt.Sprintf("big-%d", i), s(big)))
	}
	var many []types.TransactWriteItem
	for i := range 101 {
		many = append(many, put(fmt.Sprintf("many-%d", i)))
	}
	runRefusals(t, c, []string{tbl}, []refusal{
		{"empty TransactItems", "ValidationException", func(ctx context.Context) error { return write(ctx, []types.TransactWriteItem{}...) }},
		{"101 actions", "ValidationException", func(ctx context.Context) error { return write(ctx, many...) }},
		{"over 4 MB", "ValidationException", func(ctx context.Context) error { return write(ctx, overFourMB...) }},
		{"two actions on one item", "ValidationException", func(ctx context.Context) error {
			return write(ctx, put("dup"), types.TransactWriteItem{Delete: &types.Delete{TableName: aws.String(tbl), Key: key("dup")}})
		}},
		{"an action of no kind", "ValidationException", func(ctx context.Context) error { return write(ctx, put("a"), types.TransactWriteItem{}) }},
		{"a check on a missing table", "ResourceNotFoundException", func(ctx context.Context) error {
			return write(ctx, put("a"), types.TransactWriteItem{ConditionCheck: &types.ConditionCheck{
				TableName: aws.String(missingTable()), Key: key("a"), ConditionExpression: aws.String("attribute_exists(pk)")}})
		}},
		{"an empty string key", "ValidationException", func(ctx context.Context) error {
			return write(ctx, put("a"), types.TransactWriteItem{Delete: &types.Delete{TableName: aws.String(tbl), Key: key("")}})
		}},
		{"a token over 36 characters", "ValidationException", func(ctx context.Context) error {
			_, err := c.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{
				TransactItems: []types.TransactWriteItem{put("a")}, ClientRequestToken: aws.String(strings.Repeat("t", 37))})
			return err
		}},
		{"an unknown ReturnConsumedCapacity", "ValidationException", func(ctx context.Context) error {
			_, err := c.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{
				TransactItems: []types.TransactWriteItem{put("a")}, ReturnConsumedCapacity: "BOGUS"})
			return err
		}},
		{"an unused ExpressionAttributeValues entry", "ValidationException", func(ctx context.Context) error {
			return write(ctx, types.TransactWriteItem{Put: &types.Put{TableName: aws.String(tbl), Item: key("a"),
				ConditionExpression:       aws.String("attribute_not_exists(pk)"),
				ExpressionAttributeValues: map[string]types.AttributeValue{":unused": n(1)}}})
		}},
	})

	t.Run("a key of the wrong type cancels at its action", func(t *testing.T) {
		err := write(context.Background(), put("a"), types.TransactWriteItem{Update: &types.Update{
			TableName: aws.String(tbl), Key: map[string]types.AttributeValue{"pk": n(1)},
			UpdateExpression: aws.String("SET v = :v"), ExpressionAttributeValues: map[string]types.AttributeValue{":v": n(1)}}})
		wantReasons(t, err, "None", "ValidationError")
		wantEmpty(t, c, tbl)
	})
}

func TestRefusesTransactGets(t *testing.T) {
	c := idemClient(t)
	tbl := newTable(t, c, "refuse-txget")
	get := func(k map[string]types.AttributeValue) types.TransactGetItem {
		return types.TransactGetItem{Get: &types.Get{TableName: aws.String(tbl), Key: k}}
	}
	read := func(ctx context.Context, items ...types.TransactGetItem) error {
		_, err := c.TransactGetItems(ctx, &dynamodb.TransactGetItemsInput{TransactItems: items})
		return err
	}
	runRefusals(t, c, nil, []refusal{
		{"empty TransactItems", "ValidationException", func(ctx context.Context) error { return read(ctx, []types.TransactGetItem{}...) }},
		{"two gets of one key", "ValidationException", func(ctx context.Context) error { return read(ctx, get(key("a")), get(key("a"))) }},
		{"a get on a missing table", "ResourceNotFoundException", func(ctx context.Context) error {
			return read(ctx, types.TransactGetItem{Get: &types.Get{TableName: aws.String(missingTable()), Key: key("a")}})
		}},
	})
	t.Run("a key that does not match the schema cancels at its get", func(t *testing.T) {
		wantReasons(t, read(context.Background(), get(key("a")), get(map[string]types.AttributeValue{})), "None", "ValidationError")
	})
}

// wantReasons checks err cancels a transaction with these reason codes.
func wantReasons(t *testing.T, err error, codes ...string) {
	t.Helper()
	var tce *types.TransactionCanceledException
	if !errors.As(err, &tce) {
		t.Fatalf("want TransactionCanceledException with reasons %v, got %v", codes, err)
	}
	var got []string
	for _, r := range tce.CancellationReasons {
		got = append(got, aws.ToString(r.Code))
	}
	if fmt.Sprint(got) != fmt.Sprint(codes) {
		t.Errorf("cancellation reasons: want %v, got %v", codes, got)
	}
}

func TestRefusesBatchWrites(t *testing.T) {
	c := idemClient(t)
	tbl := newTable(t, c, "refuse-batch")
	putReq := func(id string, extra ...string) types.WriteRequest {
		item := map[string]types.AttributeValue{"pk": s(id)}
		if len(extra) > 0 {
			item["v"] = s(extra[0])
		}
		return types.WriteRequest{PutRequest: &types.PutRequest{Item: item}}
	}
	batch := func(ctx context.Context, items map[string][]types.WriteRequest) error {
		_, err := c.BatchWriteItem(ctx, &dynamodb.BatchWriteItemInput{RequestItems: items})
		return err
	}
	var many []types.WriteRequest
	for i := range 26 {
		many = append(many, putReq(fmt.Sprintf("b-%d", i)))
	}
	runRefusals(t, c, []string{tbl}, []refusal{
		{"26 writes", "ValidationException", func(ctx context.Context) error { return batch(ctx, map[string][]types.WriteRequest{tbl: many}) }},
		{"no tables", "ValidationException", func(ctx context.Context) error { return batch(ctx, map[string][]types.WriteRequest{}) }},
		{"a table with no writes", "ValidationException", func(ctx context.Context) error {
			return batch(ctx, map[string][]types.WriteRequest{tbl: {}})
		}},
		{"two puts of one key", "ValidationException", func(ctx context.Context) error {
			return batch(ctx, map[string][]types.WriteRequest{tbl: {putReq("d", "1"), putReq("d", "2")}})
		}},
		{"a put and a delete of one key", "ValidationException", func(ctx context.Context) error {
			return batch(ctx, map[string][]types.WriteRequest{tbl: {putReq("d"), {DeleteRequest: &types.DeleteRequest{Key: key("d")}}}})
		}},
		{"an item over 400 KB after a good one", "ValidationException", func(ctx context.Context) error {
			return batch(ctx, map[string][]types.WriteRequest{tbl: {putReq("first"), putReq("huge", strings.Repeat("x", 410_000)), putReq("last")}})
		}},
		{"a delete key of the wrong type", "ValidationException", func(ctx context.Context) error {
			return batch(ctx, map[string][]types.WriteRequest{tbl: {putReq("first"), {DeleteRequest: &types.DeleteRequest{Key: map[string]types.AttributeValue{"pk": n(1)}}}}})
		}},
		{"a missing table", "ResourceNotFoundException", func(ctx context.Context) error {
			return batch(ctx, map[string][]types.WriteRequest{tbl: {putReq("first")}, missingTable(): {putReq("a")}})
		}},
	})
}

// TestBatchWriteIsAllOrNothing: an item of 407,000 bytes is under
// DynamoDB's 400 KB and over moto's own limit, so DynamoDB writes both items
// of this batch and the local server may refuse it; either way, never one
// item without the other.
func TestBatchWriteIsAllOrNothing(t *testing.T) {
	c := idemClient(t)
	tbl := newTable(t, c, "batch-atomic")
	ctx := context.Background()
	_, err := c.BatchWriteItem(ctx, &dynamodb.BatchWriteItemInput{RequestItems: map[string][]types.WriteRequest{tbl: {
		{PutRequest: &types.PutRequest{Item: key("small")}},
		{PutRequest: &types.PutRequest{Item: map[string]types.AttributeValue{"pk": s("large"), "v": s(strings.Repeat("x", 407_000))}}},
	}}})
	small, large := get(t, c, tbl, key("small")) != nil, get(t, c, tbl, key("large")) != nil
	if small != large || (err == nil) != small {
		t.Errorf("batch answered %v; small item written: %v, large item written: %v", err, small, large)
	}
}
