package sqsconsumer

import (
	"errors"
	"fmt"
	"strings"

	"github.com/aws/aws-lambda-go/events"
)

// KeyAttribute is the message attribute a producer sets to name a message's
// idempotency key.
const KeyAttribute = "IdempotencyKey"

// ErrNoKey: the record carries no idempotency key.
var ErrNoKey = errors.New("sqsconsumer: no idempotency key")

// A KeyFunc returns a record's idempotency key: "" when the record has no
// key of the kind it reads, an error when it has one that cannot be used.
type KeyFunc func(rec events.SQSMessage) (string, error)

// DefaultKey is the key order used when Options.Key is nil: AttributeKey,
// then DeduplicationKey, then MessageIDKey.
func DefaultKey(rec events.SQSMessage) (string, error) { return defaultKey(rec) }

var defaultKey = FirstKey(AttributeKey, DeduplicationKey, MessageIDKey)

// FirstKey returns the first non-empty key of fns, in order, stopping at the
// first error: a key that is present but unusable is not skipped over.
func FirstKey(fns ...KeyFunc) KeyFunc {
	return func(rec events.SQSMessage) (string, error) {
		for _, fn := range fns {
			if key, err := fn(rec); key != "" || err != nil {
				return key, err
			}
		}
		return "", nil
	}
}

// AttributeKey reads the message attribute IdempotencyKey, which must be a
// non-empty String (or a custom String type such as "String.uuid"). It is
// the one key that survives a producer re-sending the same message.
func AttributeKey(rec events.SQSMessage) (string, error) {
	a, ok := rec.MessageAttributes[KeyAttribute]
	if !ok {
		return "", nil
	}
	if a.DataType != "String" && !strings.HasPrefix(a.DataType, "String.") {
		return "", fmt.Errorf("sqsconsumer: message attribute %s has data type %q; want String", KeyAttribute, a.DataType)
	}
	if a.StringValue == nil || *a.StringValue == "" {
		return "", fmt.Errorf("sqsconsumer: message attribute %s is empty", KeyAttribute)
	}
	return *a.StringValue, nil
}

// DeduplicationKey reads a FIFO queue's MessageDeduplicationId (the
// producer's explicit id, or the SHA-256 of the body under content-based
// deduplication) with the record's MessageGroupId, as
//
//	group + "/" + MessageDeduplicationId
//
// where any "%" and "/" in the group are written "%25" and "%2F": the first
// "/" ends the group, so no two (group, id) pairs share a key
// ("acc-9/evt_101"). The group is part of the key because a high-throughput
// FIFO queue (DeduplicationScope messageGroup) deduplicates within a group:
// one id in two groups is two messages there, and a key without the group
// would answer the second one Duplicate, or fail it as a reuse of the key.
// Standard queues have no MessageDeduplicationId, and the key is "".
//
// SQS deduplicates for 5 minutes, the kit for the claim's retention: under
// content-based deduplication, two messages with the same body in one
// group are one message for that whole time.
func DeduplicationKey(rec events.SQSMessage) (string, error) {
	id := rec.Attributes["MessageDeduplicationId"]
	if id == "" {
		return "", nil
	}
	return groupEscaper.Replace(rec.Attributes["MessageGroupId"]) + "/" + id, nil
}

var groupEscaper = strings.NewReplacer("%", "%25", "/", "%2F")

// QueueDeduplicationKey reads a FIFO queue's MessageDeduplicationId alone,
// the key DeduplicationKey gave before it held the message group. It is
// right only for a queue whose DeduplicationScope is queue (the default),
// where SQS too takes one id in two groups as one message; use it in
// Options.Key to keep the claims made under that key valid across an
// upgrade (see the package doc).
func QueueDeduplicationKey(rec events.SQSMessage) (string, error) {
	return rec.Attributes["MessageDeduplicationId"], nil
}

// MessageIDKey reads the record's messageId. SQS keeps it across
// redeliveries of one message, but a producer that sends the message again
// gets a new one, so it dedupes redeliveries only.
func MessageIDKey(rec events.SQSMessage) (string, error) {
	return rec.MessageId, nil
}

// QueueName is the last segment of an SQS queue ARN
// ("arn:aws:sqs:us-east-1:123456789012:credits" → "credits").
func QueueName(arn string) string {
	return arn[strings.LastIndexByte(arn, ':')+1:]
}

func isFIFO(rec events.SQSMessage) bool {
	return strings.HasSuffix(rec.EventSourceARN, ".fifo")
}
