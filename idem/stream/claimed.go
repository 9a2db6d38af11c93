package stream

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/aws/aws-lambda-go/events"

	"github.com/idemkit/kit/idem"
)

// Claimed makes h's effect commit once per DynamoDB stream record: each
// record is claimed in store under its eventID, which Lambda's retries of
// a batch keep, together with h's writes, so a record run again after a
// failure later in its batch is a Duplicate. The Source, for metrics and
// as the scope of the keys, is the table's name, read from the record's
// eventSourceARN; the payload is the record's stream data (its keys,
// images and sequence number), so the same eventID with other data is a
// key reuse.
func Claimed(store *idem.Store, h func(context.Context, events.DynamoDBEventRecord) (idem.Effect, error)) (func(context.Context, events.DynamoDBEventRecord) error, error) {
	if store == nil || h == nil {
		return nil, errors.New("stream: Claimed: nil Store or handler")
	}
	return func(ctx context.Context, rec events.DynamoDBEventRecord) error {
		msg := idem.Message{ID: rec.EventID, Source: TableName(rec.EventSourceArn), Payload: []byte(rec.Change.SequenceNumber)}
		if msg.ID == "" {
			err := fmt.Errorf("stream record %s has no eventID", rec.Change.SequenceNumber)
			store.ReportFailure(ctx, msg, err)
			return err
		}
		_, err := store.Process(ctx, msg, func(ctx context.Context, _ idem.Message) (idem.Effect, error) { return h(ctx, rec) })
		return err
	}, nil
}

// TableName is the table of a DynamoDB stream's ARN
// (arn:aws:dynamodb:<region>:<account>:table/<name>/stream/<label>), or
// "stream" when the ARN is not one.
func TableName(arn string) string {
	_, rest, ok := strings.Cut(arn, ":table/")
	if name, _, _ := strings.Cut(rest, "/"); ok && name != "" {
		return name
	}
	return "stream"
}
