package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/idemkit/kit/idem/internal/wire"
	"github.com/idemkit/kit/idem/sqsconsumer"
)

// A redrive marker remembers, in the processed-ids table, that a
// dead-lettered message's copy is being or was sent, since the DLQ
// message itself cannot be marked: a run whose DeleteMessage failed after
// its SendMessage leaves the message in the DLQ, and the next run must
// see it was sent. Its key is the Store's KeyPrefix, "#redrive#" and the
// messageId (which SQS keeps into the DLQ): a claim key's scope holds no
// "#" and is never empty, and outbox items are "#outbox#", so no claim or
// outbox item can have it. Its kind is "redrive", which the relay and list
// leave alone, and it expires with the DLQ's retention, after which the
// message is gone too.
const (
	markerKind    = "redrive"
	markerSending = "sending" // written before the send: its outcome unknown until updated
	markerSent    = "sent"    // the send succeeded
)

// marker is a redrive marker as read.
type marker struct {
	State string    `json:"state"`
	Queue string    `json:"queue"`          // where the copy went
	Copy  string    `json:"copy,omitempty"` // the copy's messageId, once sent
	At    time.Time `json:"at"`             // when the send began, or succeeded
	token string    // the run's, to change only its own marker
}

// The marker's attributes besides the table's key, kind and expiry.
const (
	markerStateAttr = "redriveState"
	markerQueueAttr = "redriveQueue"
	markerCopyAttr  = "redriveCopy"
	markerAtAttr    = "redriveAt"
	markerTokenAttr = "redriveToken"
	markerDLQAttr   = "redriveDLQ"
)

func (c *claims) markerKey(messageID string) string { return c.prefix + "#redrive#" + messageID }

// getMarker reads messageID's marker with a consistent read: nil when
// there is none.
func (c *claims) getMarker(ctx context.Context, messageID string) (*marker, error) {
	key := c.markerKey(messageID)
	var out *dynamodb.GetItemOutput
	err := retry(ctx, "GetItem "+key, func() (err error) {
		out, err = c.db.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(c.table), Key: c.keyItem(key), ConsistentRead: aws.Bool(true)})
		return err
	})
	if err != nil {
		return nil, c.keyErr(ctx, "GetItem "+key+" in", c.table, err)
	}
	if s, ok := out.Item[wire.KindAttr].(*types.AttributeValueMemberS); !ok || s.Value != markerKind {
		return nil, nil
	}
	str := func(name string) string {
		if s, ok := out.Item[name].(*types.AttributeValueMemberS); ok {
			return s.Value
		}
		return ""
	}
	m := &marker{State: str(markerStateAttr), Queue: str(markerQueueAttr), Copy: str(markerCopyAttr), token: str(markerTokenAttr)}
	m.At, _ = time.Parse(time.RFC3339Nano, str(markerAtAttr))
	return m, nil
}

// errMarkedSent: putMarker found the copy already sent.
var errMarkedSent = errors.New("an earlier run sent its copy")

// putMarker writes m's marker before its copy is sent to q: a new one, or
// over one whose send was never confirmed. It returns the run's token, or
// errMarkedSent when the copy was sent meanwhile.
func (c *claims) putMarker(ctx context.Context, m *dlqMessage, dlq, q *queue, now time.Time) (string, error) {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	token := hex.EncodeToString(b)
	a := c.names()
	item := c.keyItem(c.markerKey(m.MessageID))
	for k, v := range map[string]string{wire.KindAttr: markerKind, markerStateAttr: markerSending, markerQueueAttr: q.url,
		markerAtAttr: now.UTC().Format(time.RFC3339Nano), markerTokenAttr: token, markerDLQAttr: dlq.arn} {
		item[k] = &types.AttributeValueMemberS{Value: v}
	}
	item[a.ExpiresAt] = &types.AttributeValueMemberN{Value: strconv.FormatInt(now.Add(dlq.retention).Unix(), 10)}
	in := &dynamodb.PutItemInput{TableName: aws.String(c.table), Item: item,
		ConditionExpression:       aws.String("attribute_not_exists(#k) OR #s = :sending"),
		ExpressionAttributeNames:  map[string]string{"#k": a.Key, "#s": markerStateAttr},
		ExpressionAttributeValues: map[string]types.AttributeValue{":sending": &types.AttributeValueMemberS{Value: markerSending}}}
	err := retry(ctx, "PutItem "+c.markerKey(m.MessageID), func() error {
		_, err := c.db.PutItem(ctx, in)
		return err
	})
	if isCode(err, "ConditionalCheckFailedException") {
		return "", errMarkedSent
	}
	return token, err
}

// markSent records the copy's messageId on the run's own marker.
func (c *claims) markSent(ctx context.Context, messageID, token, copyID string, now time.Time) error {
	key := c.markerKey(messageID)
	in := &dynamodb.UpdateItemInput{TableName: aws.String(c.table), Key: c.keyItem(key),
		UpdateExpression:         aws.String("SET #s = :sent, #c = :copy, #at = :at"),
		ConditionExpression:      aws.String("#t = :token"),
		ExpressionAttributeNames: map[string]string{"#s": markerStateAttr, "#c": markerCopyAttr, "#at": markerAtAttr, "#t": markerTokenAttr},
		ExpressionAttributeValues: map[string]types.AttributeValue{":sent": &types.AttributeValueMemberS{Value: markerSent},
			":copy": &types.AttributeValueMemberS{Value: copyID}, ":at": &types.AttributeValueMemberS{Value: now.UTC().Format(time.RFC3339Nano)},
			":token": &types.AttributeValueMemberS{Value: token}}}
	return retry(ctx, "UpdateItem "+key, func() error {
		_, err := c.db.UpdateItem(ctx, in)
		return err
	})
}

// dropMarker deletes the run's own marker of a copy that was not sent.
func (c *claims) dropMarker(ctx context.Context, messageID, token string) error {
	key := c.markerKey(messageID)
	in := &dynamodb.DeleteItemInput{TableName: aws.String(c.table), Key: c.keyItem(key), ConditionExpression: aws.String("#t = :token"),
		ExpressionAttributeNames:  map[string]string{"#t": markerTokenAttr},
		ExpressionAttributeValues: map[string]types.AttributeValue{":token": &types.AttributeValueMemberS{Value: token}}}
	return retry(ctx, "DeleteItem "+key, func() error {
		_, err := c.db.DeleteItem(ctx, in)
		return err
	})
}

// maxMessageAttributes is SQS's limit on a message's attributes.
const maxMessageAttributes = 10

// copyInput is the copy of m a redrive sends to q: its body and message
// attributes, and the redrive attributes naming the original's messageId
// and FIFO deduplication id (kept from m when m is itself a copy), which
// sqsconsumer's key functions read in place of the copy's own; on FIFO,
// m's group and a deduplication id of the copy's own, which SQS delivers
// within the 5 minutes it would drop the original's, and drops when this
// same message's copy is sent again within them. It says why not when the
// consumer's key (fn) would not key the copy as it keyed m.
func copyInput(m *dlqMessage, q *queue, fn sqsconsumer.KeyFunc) (*sqs.SendMessageInput, error) {
	in := &sqs.SendMessageInput{QueueUrl: aws.String(q.url), MessageBody: m.msg.Body, MessageAttributes: map[string]sqstypes.MessageAttributeValue{}}
	for k, v := range m.msg.MessageAttributes {
		in.MessageAttributes[k] = v
	}
	carry := map[string]string{sqsconsumer.RedriveMessageIDAttribute: m.MessageID}
	if q.fifo {
		if m.Group == "" {
			return nil, errors.New("a FIFO queue needs a message group, and it has none")
		}
		in.MessageGroupId = aws.String(m.Group)
		in.MessageDeduplicationId = aws.String("redrive-" + m.MessageID)
		if m.DedupID != "" {
			carry[sqsconsumer.RedriveDeduplicationIDAttribute] = m.DedupID
		}
	}
	for k, v := range carry {
		if _, ok := in.MessageAttributes[k]; !ok { // m is a copy: the original's stays
			in.MessageAttributes[k] = sqstypes.MessageAttributeValue{DataType: aws.String("String"), StringValue: aws.String(v)}
		}
	}
	if len(in.MessageAttributes) > maxMessageAttributes {
		// A key that needs none of them (an IdempotencyKey) goes without.
		for k := range carry {
			if _, ok := m.msg.MessageAttributes[k]; !ok {
				delete(in.MessageAttributes, k)
			}
		}
	}
	rec := events.SQSMessage{MessageId: "the copy's own", Body: aws.ToString(in.MessageBody), EventSourceARN: q.arn,
		Attributes: map[string]string{}, MessageAttributes: map[string]events.SQSMessageAttribute{}}
	if q.fifo {
		rec.Attributes["MessageGroupId"], rec.Attributes["MessageDeduplicationId"] = m.Group, aws.ToString(in.MessageDeduplicationId)
	}
	for k, v := range in.MessageAttributes {
		rec.MessageAttributes[k] = events.SQSMessageAttribute{DataType: aws.ToString(v.DataType), StringValue: v.StringValue, BinaryValue: v.BinaryValue}
	}
	key, err := fn(rec)
	switch {
	case err != nil:
		return nil, fmt.Errorf("the consumer's key of the copy cannot be read: %v", err)
	case key != m.Key && len(in.MessageAttributes) == len(m.msg.MessageAttributes) && len(m.msg.MessageAttributes) > maxMessageAttributes-len(carry):
		return nil, fmt.Errorf("it has %d message attributes, and the copy needs the redrive's %d to be keyed as it is (SQS takes %d)", len(m.msg.MessageAttributes), len(carry), maxMessageAttributes)
	case key != m.Key:
		return nil, fmt.Errorf("the consumer's key (-key-func) of the copy would be %q, not %q", key, m.Key)
	}
	return in, nil
}
