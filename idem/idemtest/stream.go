package idemtest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	dtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// StreamRecords reads every record of table's DynamoDB stream, each shard
// from its start, as Lambda hands them to a function
// (events.DynamoDBEventRecord: the JSON DynamoDB Streams answers), for a
// test of a stream consumer such as idem/outbox's relay. The stream is
// read from client's endpoint, where the kit's local server serves it.
func StreamRecords(tb testing.TB, client *dynamodb.Client, table string) []events.DynamoDBEventRecord {
	tb.Helper()
	return NewStreamReader(tb, client, table).Read(tb)
}

// ReadStream is StreamRecords for code without a testing.TB, such as a
// benchmark command.
func ReadStream(ctx context.Context, client *dynamodb.Client, table string) ([]events.DynamoDBEventRecord, error) {
	desc, err := client.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(table)})
	if err != nil {
		return nil, err
	}
	arn := aws.ToString(desc.Table.LatestStreamArn)
	if arn == "" {
		return nil, fmt.Errorf("%s has no stream", table)
	}
	if client.Options().BaseEndpoint == nil {
		return nil, fmt.Errorf("the client has no endpoint (BaseEndpoint): streams are read from a local server's")
	}
	r := &StreamReader{endpoint: aws.ToString(client.Options().BaseEndpoint), arn: arn, next: map[string]*string{}}
	return r.read(ctx)
}

// StreamReader reads a table's stream as StreamRecords does, each Read
// returning the records written since the last.
type StreamReader struct {
	endpoint, arn string
	next          map[string]*string // shard id → where its next read starts
}

// NewStreamReader returns a reader of table's stream from its start.
func NewStreamReader(tb testing.TB, client *dynamodb.Client, table string) *StreamReader {
	tb.Helper()
	r, err := OpenStream(context.Background(), client, table)
	if err != nil {
		tb.Fatal(err)
	}
	return r
}

// OpenStream is NewStreamReader for code without a testing.TB, such as a
// benchmark command; its reader's Next is Read.
func OpenStream(ctx context.Context, client *dynamodb.Client, table string) (*StreamReader, error) {
	desc, err := client.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(table)})
	if err != nil {
		return nil, fmt.Errorf("idemtest: the stream of %s: %w", table, err)
	}
	arn := aws.ToString(desc.Table.LatestStreamArn)
	if arn == "" {
		return nil, fmt.Errorf("idemtest: %s has no stream (Table.Stream, EnableStream)", table)
	}
	return &StreamReader{endpoint: aws.ToString(client.Options().BaseEndpoint), arn: arn, next: map[string]*string{}}, nil
}

// Next is Read for code without a testing.TB.
func (r *StreamReader) Next(ctx context.Context) ([]events.DynamoDBEventRecord, error) {
	return r.read(ctx)
}

// Read returns the stream's records written since the last Read, shard by
// shard, in order within each. An open shard's reading resumes where the
// last Read ended.
func (r *StreamReader) Read(tb testing.TB) []events.DynamoDBEventRecord {
	tb.Helper()
	recs, err := r.read(context.Background())
	if err != nil {
		tb.Fatalf("idemtest: the stream %s: %v", r.arn, err)
	}
	return recs
}

func (r *StreamReader) read(ctx context.Context) ([]events.DynamoDBEventRecord, error) {
	var stream struct {
		StreamDescription struct{ Shards []struct{ ShardId string } }
	}
	if err := streamsCall(ctx, r.endpoint, "DescribeStream", map[string]string{"StreamArn": r.arn}, &stream); err != nil {
		return nil, err
	}
	var records []events.DynamoDBEventRecord
	for _, sh := range stream.StreamDescription.Shards {
		it, ok := r.next[sh.ShardId]
		if ok && it == nil {
			continue // a closed shard, read to its end
		}
		if !ok {
			var out struct{ ShardIterator *string }
			if err := streamsCall(ctx, r.endpoint, "GetShardIterator", map[string]string{"StreamArn": r.arn, "ShardId": sh.ShardId, "ShardIteratorType": "TRIM_HORIZON"}, &out); err != nil {
				return nil, err
			}
			it = out.ShardIterator
		}
		for it != nil {
			var page struct {
				Records           []events.DynamoDBEventRecord
				NextShardIterator *string
			}
			if err := streamsCall(ctx, r.endpoint, "GetRecords", map[string]any{"ShardIterator": *it}, &page); err != nil {
				return nil, err
			}
			for _, rec := range page.Records {
				rec.EventSourceArn = r.arn // as Lambda's event source mapping sets it
				records = append(records, rec)
			}
			it = page.NextShardIterator // nil once a closed shard is read to its end
			if len(page.Records) == 0 {
				break
			}
		}
		r.next[sh.ShardId] = it
	}
	return records, nil
}

// streamsCall is one DynamoDB Streams call, its answer decoded straight
// into aws-lambda-go's types (the SDK's dynamodbstreams types are not
// Lambda's). The local server checks no signature.
func streamsCall(ctx context.Context, endpoint, op string, in, out any) error {
	b, err := json.Marshal(in)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, bytes.NewReader(b))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/x-amz-json-1.0")
	req.Header.Set("X-Amz-Target", "DynamoDBStreams_20120810."+op)
	req.Header.Set("Authorization", "AWS4-HMAC-SHA256 Credential=test/20260101/us-east-1/dynamodb/aws4_request, SignedHeaders=host, Signature=0")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %d %s", op, resp.StatusCode, body)
	}
	return json.Unmarshal(body, out)
}

// EnableStream turns on table's stream with the NEW_IMAGE view, as an
// outbox's relay reads it.
func EnableStream(tb testing.TB, client *dynamodb.Client, table string) {
	tb.Helper()
	_, err := client.UpdateTable(context.Background(), &dynamodb.UpdateTableInput{TableName: aws.String(table),
		StreamSpecification: &dtypes.StreamSpecification{StreamEnabled: aws.Bool(true), StreamViewType: dtypes.StreamViewTypeNewImage}})
	if err != nil {
		tb.Fatalf("idemtest: enable the stream of %s: %v", table, err)
	}
}
