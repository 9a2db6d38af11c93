package localstack

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
)

// streamsAPI calls DynamoDB Streams in its JSON protocol and keeps the
// records as the JSON it answers, which is the shape Lambda hands a
// function (events.DynamoDBEventRecord) less eventSourceARN: the SDK's
// client would turn them into its own types first.
type streamsAPI struct {
	endpoint, region string
	client           *http.Client
}

// streamError is an error DynamoDB Streams answered, such as
// ExpiredIteratorException or TrimmedDataAccessException.
type streamError struct {
	Op, Type, Message string
	Status            int
}

func (e *streamError) Error() string {
	return fmt.Sprintf("DynamoDB Streams %s: %d %s: %s", e.Op, e.Status, e.Type, e.Message)
}

func (c *streamsAPI) call(ctx context.Context, op string, in, out any) error {
	body, err := json.Marshal(in)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.endpoint, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/x-amz-json-1.0")
	req.Header.Set("X-Amz-Target", "DynamoDBStreams_20120810."+op)
	creds, err := credentialsFromEnv().Retrieve(ctx)
	if err != nil {
		return err
	}
	sum := sha256.Sum256(body)
	if err := v4.NewSigner().SignHTTP(ctx, creds, req, hex.EncodeToString(sum[:]), "dynamodb", c.region, time.Now()); err != nil {
		return err
	}
	client := c.client
	if client == nil {
		client = http.DefaultClient
	}
	resp, err := client.Do(req)
	if err != nil {
		return fmt.Errorf("DynamoDB Streams %s: %w", op, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return fmt.Errorf("DynamoDB Streams %s: %w", op, err)
	}
	if resp.StatusCode != http.StatusOK {
		var e struct {
			Type    string `json:"__type"`
			Message string `json:"message"`
		}
		_ = json.Unmarshal(b, &e)
		if e.Message == "" {
			e.Message = strings.TrimSpace(string(b))
		}
		_, e.Type, _ = strings.Cut(e.Type, "#") // com.amazonaws.dynamodb.v20120810#Name
		return &streamError{Op: op, Type: e.Type, Message: e.Message, Status: resp.StatusCode}
	}
	return json.Unmarshal(b, out)
}

// shard is a shard of a stream, as DescribeStream lists it.
type shard struct {
	ShardID       string `json:"ShardId"`
	ParentShardID string `json:"ParentShardId"`
}

func (c *streamsAPI) shards(ctx context.Context, arn string) ([]shard, error) {
	var all []shard
	in := map[string]any{"StreamArn": arn}
	for {
		var out struct {
			StreamDescription struct {
				Shards               []shard
				LastEvaluatedShardId *string
			}
		}
		if err := c.call(ctx, "DescribeStream", in, &out); err != nil {
			return nil, err
		}
		all = append(all, out.StreamDescription.Shards...)
		if out.StreamDescription.LastEvaluatedShardId == nil {
			return all, nil
		}
		in["ExclusiveStartShardId"] = *out.StreamDescription.LastEvaluatedShardId
	}
}

// iterator gets a shard iterator of type typ (TRIM_HORIZON, LATEST,
// AFTER_SEQUENCE_NUMBER with seq).
func (c *streamsAPI) iterator(ctx context.Context, arn, shardID, typ, seq string) (string, error) {
	in := map[string]string{"StreamArn": arn, "ShardId": shardID, "ShardIteratorType": typ}
	if seq != "" {
		in["SequenceNumber"] = seq
	}
	var out struct{ ShardIterator string }
	err := c.call(ctx, "GetShardIterator", in, &out)
	return out.ShardIterator, err
}

// records reads a page of a shard; next is "" when the shard is closed
// and read to its end.
func (c *streamsAPI) records(ctx context.Context, it string, limit int) (recs []json.RawMessage, next string, err error) {
	var out struct {
		Records           []json.RawMessage
		NextShardIterator *string
	}
	if err := c.call(ctx, "GetRecords", map[string]any{"ShardIterator": it, "Limit": limit}, &out); err != nil {
		return nil, "", err
	}
	if out.NextShardIterator != nil {
		next = *out.NextShardIterator
	}
	return out.Records, next, nil
}
