package localdynamo_test

// DynamoDB Streams as the kit's outbox relay reads them: one record per item
// change that happened, in order per item, and nothing for a write that did
// not happen. Like the conformance test, these run against any server
// AWS_ENDPOINT_URL_DYNAMODB names (AWS_ENDPOINT_URL_DYNAMODB_STREAMS for its
// streams endpoint when that differs), except the ones that need this
// launcher's Sweep or options.

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"math/big"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	streamtypes "github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"

	"github.com/idemkit/kit/idem/idemtest"
	"github.com/idemkit/kit/idem/idemtest/internal/localdynamo"
)

// A write is one call a case makes; wantFail says the call must fail (a
// condition or a cancelled transaction), which must leave no record.
type write struct {
	call     func(ctx context.Context, c *dynamodb.Client, table string) error
	wantFail bool
}

func item(id string, v int) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{"pk": s(id), "v": n(v)}
}

func key(id string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{"pk": s(id)}
}

func put(it map[string]types.AttributeValue, cond string) write {
	return write{call: func(ctx context.Context, c *dynamodb.Client, table string) error {
		in := &dynamodb.PutItemInput{TableName: aws.String(table), Item: it}
		if cond != "" {
			in.ConditionExpression = aws.String(cond)
		}
		_, err := c.PutItem(ctx, in)
		return err
	}}
}

func update(id, expr string, v int, cond string) write {
	return write{call: func(ctx context.Context, c *dynamodb.Client, table string) error {
		in := &dynamodb.UpdateItemInput{
			TableName: aws.String(table), Key: key(id), UpdateExpression: aws.String(expr),
			ExpressionAttributeValues: map[string]types.AttributeValue{":v": n(v)},
		}
		if cond != "" {
			in.ConditionExpression = aws.String(cond)
		}
		_, err := c.UpdateItem(ctx, in)
		return err
	}}
}

func del(id, cond string) write {
	return write{call: func(ctx context.Context, c *dynamodb.Client, table string) error {
		in := &dynamodb.DeleteItemInput{TableName: aws.String(table), Key: key(id)}
		if cond != "" {
			in.ConditionExpression = aws.String(cond)
		}
		_, err := c.DeleteItem(ctx, in)
		return err
	}}
}

func failing(w write) write { w.wantFail = true; return w }

type txItem func(table string) types.TransactWriteItem

func txPut(it map[string]types.AttributeValue, cond string) txItem {
	return func(table string) types.TransactWriteItem {
		p := &types.Put{TableName: aws.String(table), Item: it}
		if cond != "" {
			p.ConditionExpression = aws.String(cond)
		}
		return types.TransactWriteItem{Put: p}
	}
}

func txAdd(id string, v int) txItem {
	return func(table string) types.TransactWriteItem {
		return types.TransactWriteItem{Update: &types.Update{
			TableName: aws.String(table), Key: key(id), UpdateExpression: aws.String("ADD v :v"),
			ExpressionAttributeValues: map[string]types.AttributeValue{":v": n(v)},
		}}
	}
}

func txDelete(id string) txItem {
	return func(table string) types.TransactWriteItem {
		return types.TransactWriteItem{Delete: &types.Delete{TableName: aws.String(table), Key: key(id)}}
	}
}

// txCheckV is a ConditionCheck that id's v equals v.
func txCheckV(id string, v int) txItem {
	return func(table string) types.TransactWriteItem {
		return types.TransactWriteItem{ConditionCheck: &types.ConditionCheck{
			TableName: aws.String(table), Key: key(id), ConditionExpression: aws.String("v = :v"),
			ExpressionAttributeValues: map[string]types.AttributeValue{":v": n(v)},
		}}
	}
}

// transact sends one TransactWriteItems; with a token it is sent three
// times, as the SDK resends a commit whose answer was lost.
func transact(withToken bool, items ...txItem) write {
	return write{call: func(ctx context.Context, c *dynamodb.Client, table string) error {
		in := &dynamodb.TransactWriteItemsInput{}
		for _, it := range items {
			in.TransactItems = append(in.TransactItems, it(table))
		}
		sends := 1
		if withToken {
			sum := sha256.Sum256([]byte(table)) // one token per table: the server is shared
			in.ClientRequestToken = aws.String(fmt.Sprintf("%x", sum[:16]))
			sends = 3
		}
		for range sends {
			if _, err := c.TransactWriteItems(ctx, in); err != nil {
				return err
			}
		}
		return nil
	}}
}

// TestStreamRecordsOneChangeOneRecord: every write that changes an item
// adds exactly one record with the table's images, in order per item; a
// write that fails or changes nothing adds none. Stock moto fails the
// update, nothing-changed, cancelled and region checks.
func TestStreamRecordsOneChangeOneRecord(t *testing.T) {
	c := idemtest.Client(idemtest.Endpoint(t))
	sc := streamsClient(c)
	for _, tc := range []struct {
		name   string
		writes []write
		want   []string
	}{{
		name:   "put, replace, delete",
		writes: []write{put(item("a", 1), ""), put(item("a", 2), ""), del("a", "")},
		want: []string{
			"INSERT {pk=a} new{pk=a v=1}",
			"MODIFY {pk=a} old{pk=a v=1} new{pk=a v=2}",
			"REMOVE {pk=a} old{pk=a v=2}",
		},
	}, {
		name:   "an update that creates the item, then updates in order",
		writes: []write{update("a", "SET v = :v", 1, ""), update("a", "ADD v :v", 1, ""), update("a", "ADD v :v", 1, "")},
		want: []string{
			"INSERT {pk=a} new{pk=a v=1}",
			"MODIFY {pk=a} old{pk=a v=1} new{pk=a v=2}",
			"MODIFY {pk=a} old{pk=a v=2} new{pk=a v=3}",
		},
	}, {
		// DynamoDB developer guide, "Change data capture for DynamoDB
		// Streams": a PutItem or UpdateItem that does not change any data
		// in an item writes no stream record.
		name:   "writes that change nothing",
		writes: []write{put(item("a", 1), ""), put(item("a", 1), ""), update("a", "SET v = :v", 1, ""), del("missing", "")},
		want:   []string{"INSERT {pk=a} new{pk=a v=1}"},
	}, {
		name: "failed conditions",
		writes: []write{
			put(item("a", 1), ""),
			failing(put(item("a", 2), "attribute_not_exists(pk)")),
			failing(update("a", "SET v = :v", 5, "attribute_not_exists(pk)")),
			failing(del("a", "attribute_not_exists(pk)")),
			failing(put(item("b", 1), "attribute_exists(pk)")),
		},
		want: []string{"INSERT {pk=a} new{pk=a v=1}"},
	}, {
		name: "a committed transaction: one record per item it changed",
		writes: []write{
			put(item("b", 1), ""), put(item("c", 1), ""), put(item("d", 1), ""),
			transact(false, txPut(item("a", 1), "attribute_not_exists(pk)"), txAdd("b", 1), txDelete("c"), txCheckV("d", 1)),
		},
		want: []string{
			"INSERT {pk=b} new{pk=b v=1}", "INSERT {pk=c} new{pk=c v=1}", "INSERT {pk=d} new{pk=d v=1}",
			"INSERT {pk=a} new{pk=a v=1}",
			"MODIFY {pk=b} old{pk=b v=1} new{pk=b v=2}",
			"REMOVE {pk=c} old{pk=c v=1}",
		},
	}, {
		name: "a cancelled transaction: the second action's condition fails",
		writes: []write{
			put(item("b", 1), ""),
			failing(transact(false, txPut(item("a", 1), "attribute_not_exists(pk)"), txCheckV("b", 2))),
		},
		want: []string{"INSERT {pk=b} new{pk=b v=1}"},
	}, {
		name: "a cancelled transaction: the last action fails after a put, an update and a delete",
		writes: []write{
			put(item("b", 1), ""), put(item("c", 1), ""), put(item("d", 1), ""),
			failing(transact(false, txPut(item("a", 1), ""), txAdd("b", 1), txDelete("c"), txCheckV("d", 2))),
			transact(false, txAdd("b", 10)), // the stream goes on after the cancelled one
		},
		want: []string{
			"INSERT {pk=b} new{pk=b v=1}", "INSERT {pk=c} new{pk=c v=1}", "INSERT {pk=d} new{pk=d v=1}",
			"MODIFY {pk=b} old{pk=b v=1} new{pk=b v=11}",
		},
	}, {
		name: "a transaction replayed with its token",
		writes: []write{
			put(item("b", 1), ""),
			transact(true, txPut(item("a", 1), "attribute_not_exists(pk)"), txAdd("b", 1)),
		},
		want: []string{
			"INSERT {pk=b} new{pk=b v=1}",
			"INSERT {pk=a} new{pk=a v=1}",
			"MODIFY {pk=b} old{pk=b v=1} new{pk=b v=2}",
		},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			table, arn := streamTable(t, c, "stream", streamtypes.StreamViewTypeNewAndOldImages, "")
			ctx := context.Background()
			for i, w := range tc.writes {
				err := w.call(ctx, c, table)
				if w.wantFail && !isConditionFailure(err) {
					t.Fatalf("write %d: want a failed condition, got %v", i, err)
				}
				if !w.wantFail && err != nil {
					t.Fatalf("write %d: %v", i, err)
				}
			}
			got := summaries(readStream(t, sc, c.Options().Region, arn, types.StreamViewTypeNewAndOldImages))
			if !slices.Equal(got, tc.want) {
				t.Errorf("records:\nwant %s\ngot  %s", strings.Join(tc.want, "\n     "), strings.Join(got, "\n     "))
			}
		})
	}
}

// TestStreamViewTypes: each StreamViewType carries its images and no others.
func TestStreamViewTypes(t *testing.T) {
	c := idemtest.Client(idemtest.Endpoint(t))
	sc := streamsClient(c)
	for _, tc := range []struct {
		view streamtypes.StreamViewType
		want []string
	}{
		{streamtypes.StreamViewTypeKeysOnly, []string{"INSERT {pk=a}", "MODIFY {pk=a}", "REMOVE {pk=a}"}},
		{streamtypes.StreamViewTypeNewImage, []string{"INSERT {pk=a} new{pk=a v=1}", "MODIFY {pk=a} new{pk=a v=2}", "REMOVE {pk=a}"}},
		{streamtypes.StreamViewTypeOldImage, []string{"INSERT {pk=a}", "MODIFY {pk=a} old{pk=a v=1}", "REMOVE {pk=a} old{pk=a v=2}"}},
		{streamtypes.StreamViewTypeNewAndOldImages, []string{"INSERT {pk=a} new{pk=a v=1}", "MODIFY {pk=a} old{pk=a v=1} new{pk=a v=2}", "REMOVE {pk=a} old{pk=a v=2}"}},
	} {
		t.Run(string(tc.view), func(t *testing.T) {
			table, arn := streamTable(t, c, "view", tc.view, "")
			ctx := context.Background()
			for _, w := range []write{put(item("a", 1), ""), update("a", "SET v = :v", 2, ""), del("a", "")} {
				if err := w.call(ctx, c, table); err != nil {
					t.Fatal(err)
				}
			}
			got := summaries(readStream(t, sc, c.Options().Region, arn, types.StreamViewType(tc.view)))
			if !slices.Equal(got, tc.want) {
				t.Errorf("records:\nwant %s\ngot  %s", strings.Join(tc.want, "\n     "), strings.Join(got, "\n     "))
			}
		})
	}
}

// TestStreamRecordsCarryTheTablesRegion: awsRegion is the Region the table
// and its stream are in (stock moto writes us-east-1 into every record).
// Local only: a real endpoint serves one Region.
func TestStreamRecordsCarryTheTablesRegion(t *testing.T) {
	if localdynamo.ExternalEndpoint() != "" {
		t.Skip("an external endpoint serves one Region")
	}
	for _, region := range []string{"eu-west-1", "ap-southeast-2"} {
		t.Run(region, func(t *testing.T) {
			c := idemtest.Client(idemtest.Endpoint(t), func(o *dynamodb.Options) { o.Region = region })
			table, arn := streamTable(t, c, "region", streamtypes.StreamViewTypeKeysOnly, "")
			if err := put(item("a", 1), "").call(context.Background(), c, table); err != nil {
				t.Fatal(err)
			}
			if got := summaries(readStream(t, streamsClient(c), region, arn, types.StreamViewTypeKeysOnly)); len(got) != 1 {
				t.Errorf("records: want 1, got %v", got)
			}
		})
	}
}

// TestTTLDeletesAreServiceRemoves: the sweeper's deletes are REMOVE records
// from DynamoDB's service principal, as DynamoDB's TTL deletes are; a
// client's DeleteItem carries no userIdentity.
func TestTTLDeletesAreServiceRemoves(t *testing.T) {
	srv := testServer(t)
	c := idemtest.Client(srv.Endpoint)
	table, arn := streamTable(t, c, "ttlstream", streamtypes.StreamViewTypeOldImage, "expiresAt")
	ctx := context.Background()
	expiry := strconv.FormatInt(time.Now().Unix()-60, 10)
	expired := map[string]types.AttributeValue{"pk": s("expired"), "expiresAt": &types.AttributeValueMemberN{Value: expiry}}
	for _, w := range []write{put(expired, ""), put(item("live", 1), ""), put(item("client", 1), ""), del("client", "")} {
		if err := w.call(ctx, c, table); err != nil {
			t.Fatal(err)
		}
	}
	if deleted, err := srv.Sweep(ctx); err != nil || deleted != 1 {
		t.Fatalf("sweep: want 1 deleted, got %d (%v)", deleted, err)
	}
	got := summaries(readStream(t, streamsClient(c), c.Options().Region, arn, types.StreamViewTypeOldImage))
	want := []string{
		"INSERT {pk=expired}", "INSERT {pk=live}", "INSERT {pk=client}",
		"REMOVE {pk=client} old{pk=client v=1}",
		"REMOVE {pk=expired} old{expiresAt=" + expiry + " pk=expired} by Service/dynamodb.amazonaws.com",
	}
	if !slices.Equal(got, want) {
		t.Errorf("records:\nwant %s\ngot  %s", strings.Join(want, "\n     "), strings.Join(got, "\n     "))
	}
}

// TestGetRecordsIteratorTypes: each ShardIteratorType starts where the
// DynamoDB Streams API says, Limit pages, and NextShardIterator goes on.
func TestGetRecordsIteratorTypes(t *testing.T) {
	c := idemtest.Client(idemtest.Endpoint(t))
	sc := streamsClient(c)
	ctx := context.Background()
	table, arn := streamTable(t, c, "iter", streamtypes.StreamViewTypeKeysOnly, "")
	for _, id := range []string{"a", "b", "c"} {
		if err := put(item(id, 1), "").call(ctx, c, table); err != nil {
			t.Fatal(err)
		}
	}
	desc, err := sc.DescribeStream(ctx, &dynamodbstreams.DescribeStreamInput{StreamArn: aws.String(arn)})
	if err != nil {
		t.Fatalf("DescribeStream: %v", err)
	}
	d := desc.StreamDescription
	if d.StreamStatus != streamtypes.StreamStatusEnabled || d.StreamViewType != streamtypes.StreamViewTypeKeysOnly ||
		aws.ToString(d.TableName) != table || len(d.KeySchema) != 1 || aws.ToString(d.KeySchema[0].AttributeName) != "pk" {
		t.Errorf("DescribeStream: want ENABLED, KEYS_ONLY, table %s keyed by pk, got %s, %s, table %s, key schema %v",
			table, d.StreamStatus, d.StreamViewType, aws.ToString(d.TableName), d.KeySchema)
	}
	if len(d.Shards) != 1 {
		t.Fatalf("DescribeStream: want 1 shard (a new table's), got %d", len(d.Shards))
	}
	shard := d.Shards[0].ShardId
	iterator := func(typ streamtypes.ShardIteratorType, seq string) *string {
		t.Helper()
		in := &dynamodbstreams.GetShardIteratorInput{StreamArn: aws.String(arn), ShardId: shard, ShardIteratorType: typ}
		if seq != "" {
			in.SequenceNumber = aws.String(seq)
		}
		out, err := sc.GetShardIterator(ctx, in)
		if err != nil {
			t.Fatalf("GetShardIterator %s: %v", typ, err)
		}
		return out.ShardIterator
	}
	latest := iterator(streamtypes.ShardIteratorTypeLatest, "") // before d is written
	if err := put(item("d", 1), "").call(ctx, c, table); err != nil {
		t.Fatal(err)
	}
	all := readStream(t, sc, c.Options().Region, arn, types.StreamViewTypeKeysOnly)
	if got := summaries(all); len(got) != 4 {
		t.Fatalf("want 4 records, got %v", got)
	}
	seqB := aws.ToString(all[1].Dynamodb.SequenceNumber)
	for _, tc := range []struct {
		name     string
		iterator *string
		want     string
	}{
		{"TRIM_HORIZON", iterator(streamtypes.ShardIteratorTypeTrimHorizon, ""), "a b c d"},
		{"LATEST taken before d", latest, "d"},
		{"AT_SEQUENCE_NUMBER of b", iterator(streamtypes.ShardIteratorTypeAtSequenceNumber, seqB), "b c d"},
		{"AFTER_SEQUENCE_NUMBER of b", iterator(streamtypes.ShardIteratorTypeAfterSequenceNumber, seqB), "c d"},
		{"LATEST now", iterator(streamtypes.ShardIteratorTypeLatest, ""), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var ids []string
			for _, r := range page(t, sc, tc.iterator, 0).Records {
				ids = append(ids, attrString(r.Dynamodb.Keys["pk"]))
			}
			if got := strings.Join(ids, " "); got != tc.want {
				t.Errorf("records: want %q, got %q", tc.want, got)
			}
		})
	}
	t.Run("Limit 1 pages through NextShardIterator", func(t *testing.T) {
		it := iterator(streamtypes.ShardIteratorTypeTrimHorizon, "")
		var pages []string
		for range 5 {
			out := page(t, sc, it, 1)
			var ids []string
			for _, r := range out.Records {
				ids = append(ids, attrString(r.Dynamodb.Keys["pk"]))
			}
			pages = append(pages, "["+strings.Join(ids, " ")+"]")
			if it = out.NextShardIterator; it == nil {
				t.Fatal("an open shard's NextShardIterator is nil")
			}
		}
		if got, want := strings.Join(pages, ""), "[a][b][c][d][]"; got != want {
			t.Errorf("pages: want %s, got %s", want, got)
		}
		if err := put(item("e", 1), "").call(ctx, c, table); err != nil {
			t.Fatal(err)
		}
		if out := page(t, sc, it, 1); len(out.Records) != 1 || attrString(out.Records[0].Dynamodb.Keys["pk"]) != "e" {
			t.Errorf("the iterator after the last page: want e, got %v", summaries(out.Records))
		}
	})
	streams, err := sc.ListStreams(ctx, &dynamodbstreams.ListStreamsInput{TableName: aws.String(table)})
	if err != nil {
		t.Fatalf("ListStreams: %v", err)
	}
	if len(streams.Streams) != 1 || aws.ToString(streams.Streams[0].StreamArn) != arn {
		t.Errorf("ListStreams(%s): want [%s], got %v", table, arn, streams.Streams)
	}
}

// TestShardIteratorsExpire: an iterator older than its lifetime (15 minutes
// on DynamoDB) gets ExpiredIteratorException, and so does one the server
// never issued; a fresh one from GetShardIterator reads on.
func TestShardIteratorsExpire(t *testing.T) {
	const lifetime = 2 * time.Second
	srv := testServer(t, func(o *localdynamo.Options) { o.ShardIteratorLifetime = lifetime })
	c := idemtest.Client(srv.Endpoint)
	sc := streamsClient(c)
	ctx := context.Background()
	table, arn := streamTable(t, c, "expiry", streamtypes.StreamViewTypeKeysOnly, "")
	if err := put(item("a", 1), "").call(ctx, c, table); err != nil {
		t.Fatal(err)
	}
	desc, err := sc.DescribeStream(ctx, &dynamodbstreams.DescribeStreamInput{StreamArn: aws.String(arn)})
	if err != nil {
		t.Fatal(err)
	}
	issued := time.Now()
	out, err := sc.GetShardIterator(ctx, &dynamodbstreams.GetShardIteratorInput{
		StreamArn: aws.String(arn), ShardId: desc.StreamDescription.Shards[0].ShardId, ShardIteratorType: streamtypes.ShardIteratorTypeTrimHorizon,
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := page(t, sc, out.ShardIterator, 0); len(got.Records) != 1 {
		t.Fatalf("a fresh iterator: want 1 record, got %d", len(got.Records))
	}
	time.Sleep(time.Until(issued.Add(lifetime + 500*time.Millisecond)))
	for name, it := range map[string]*string{"expired": out.ShardIterator, "never issued": aws.String(base64.StdEncoding.EncodeToString([]byte("nonsense")))} {
		_, err := sc.GetRecords(ctx, &dynamodbstreams.GetRecordsInput{ShardIterator: it})
		var expiredErr *streamtypes.ExpiredIteratorException
		if !errors.As(err, &expiredErr) {
			t.Errorf("%s iterator: want ExpiredIteratorException, got %v", name, err)
		}
	}
}

// streamsClient is a DynamoDB Streams client for c's server: its endpoint
// (or AWS_ENDPOINT_URL_DYNAMODB_STREAMS), Region and credentials.
func streamsClient(c *dynamodb.Client) *dynamodbstreams.Client {
	o := c.Options()
	endpoint := os.Getenv("AWS_ENDPOINT_URL_DYNAMODB_STREAMS")
	if endpoint == "" {
		endpoint = aws.ToString(o.BaseEndpoint)
	}
	return dynamodbstreams.New(dynamodbstreams.Options{Region: o.Region, BaseEndpoint: aws.String(endpoint), Credentials: o.Credentials})
}

// streamTable creates a table keyed by pk with a stream of view and returns
// its name and stream ARN.
func streamTable(t *testing.T, c *dynamodb.Client, name string, view streamtypes.StreamViewType, ttlAttribute string) (string, string) {
	t.Helper()
	table := idemtest.CreateTable(t, c, idemtest.Table{Name: name, HashKey: "pk", TTLAttribute: ttlAttribute})
	out, err := c.UpdateTable(context.Background(), &dynamodb.UpdateTableInput{
		TableName:           aws.String(table),
		StreamSpecification: &types.StreamSpecification{StreamEnabled: aws.Bool(true), StreamViewType: types.StreamViewType(view)},
	})
	if err != nil {
		t.Fatalf("enable the stream of %s: %v", table, err)
	}
	arn := aws.ToString(out.TableDescription.LatestStreamArn)
	if arn == "" {
		t.Fatalf("UpdateTable of %s returned no LatestStreamArn", table)
	}
	return table, arn
}

// readStream reads every record of every shard from TRIM_HORIZON to the
// first empty page, and checks what every record must carry: the Region,
// the source, the view type, keys, a time, and sequence numbers that grow.
func readStream(t *testing.T, sc *dynamodbstreams.Client, region, arn string, view types.StreamViewType) []streamtypes.Record {
	t.Helper()
	ctx := context.Background()
	desc, err := sc.DescribeStream(ctx, &dynamodbstreams.DescribeStreamInput{StreamArn: aws.String(arn)})
	if err != nil {
		t.Fatalf("DescribeStream %s: %v", arn, err)
	}
	var records []streamtypes.Record
	for _, shard := range desc.StreamDescription.Shards {
		out, err := sc.GetShardIterator(ctx, &dynamodbstreams.GetShardIteratorInput{
			StreamArn: aws.String(arn), ShardId: shard.ShardId, ShardIteratorType: streamtypes.ShardIteratorTypeTrimHorizon,
		})
		if err != nil {
			t.Fatalf("GetShardIterator %s: %v", aws.ToString(shard.ShardId), err)
		}
		var last *big.Int
		for it := out.ShardIterator; it != nil; {
			p := page(t, sc, it, 0)
			for _, r := range p.Records {
				d := r.Dynamodb
				if d == nil {
					t.Fatalf("record %s has no dynamodb body", aws.ToString(r.EventID))
				}
				if got := aws.ToString(r.AwsRegion); got != region {
					t.Errorf("record %s: awsRegion: want %s, got %s", aws.ToString(d.SequenceNumber), region, got)
				}
				if got := aws.ToString(r.EventSource); got != "aws:dynamodb" {
					t.Errorf("record %s: eventSource: want aws:dynamodb, got %s", aws.ToString(d.SequenceNumber), got)
				}
				if string(d.StreamViewType) != string(view) || len(d.Keys) == 0 || d.ApproximateCreationDateTime == nil {
					t.Errorf("record %s: want view %s, keys and a time, got %s, %v, %v", aws.ToString(d.SequenceNumber), view, d.StreamViewType, d.Keys, d.ApproximateCreationDateTime)
				}
				seq, ok := new(big.Int).SetString(aws.ToString(d.SequenceNumber), 10)
				if !ok || (last != nil && seq.Cmp(last) <= 0) {
					t.Errorf("sequence number %s after %v: want a larger number", aws.ToString(d.SequenceNumber), last)
				}
				last = seq
			}
			records = append(records, p.Records...)
			if len(p.Records) == 0 {
				break
			}
			it = p.NextShardIterator
		}
	}
	return records
}

func page(t *testing.T, sc *dynamodbstreams.Client, it *string, limit int32) *dynamodbstreams.GetRecordsOutput {
	t.Helper()
	in := &dynamodbstreams.GetRecordsInput{ShardIterator: it}
	if limit > 0 {
		in.Limit = aws.Int32(limit)
	}
	out, err := sc.GetRecords(context.Background(), in)
	if err != nil {
		t.Fatalf("GetRecords: %v", err)
	}
	return out
}

// summaries writes each record as "EVENT {keys} old{…} new{…} by type/principal".
func summaries(records []streamtypes.Record) []string {
	out := []string{}
	for _, r := range records {
		d := r.Dynamodb
		line := string(r.EventName) + " " + attrs(d.Keys)
		if d.OldImage != nil {
			line += " old" + attrs(d.OldImage)
		}
		if d.NewImage != nil {
			line += " new" + attrs(d.NewImage)
		}
		if u := r.UserIdentity; u != nil {
			line += " by " + aws.ToString(u.Type) + "/" + aws.ToString(u.PrincipalId)
		}
		out = append(out, line)
	}
	return out
}

func attrs(m map[string]streamtypes.AttributeValue) string {
	var parts []string
	for k, v := range m {
		parts = append(parts, k+"="+attrString(v))
	}
	sort.Strings(parts)
	return "{" + strings.Join(parts, " ") + "}"
}

func attrString(v streamtypes.AttributeValue) string {
	switch v := v.(type) {
	case *streamtypes.AttributeValueMemberS:
		return v.Value
	case *streamtypes.AttributeValueMemberN:
		return v.Value
	}
	return fmt.Sprintf("%T", v)
}

// isConditionFailure: a ConditionalCheckFailedException, or a transaction
// cancelled by a failed condition.
func isConditionFailure(err error) bool {
	var ccf *types.ConditionalCheckFailedException
	return errors.As(err, &ccf) || isCancelledByCondition(err)
}
