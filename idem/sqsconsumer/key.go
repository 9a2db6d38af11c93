package sqsconsumer

import (
	"errors"
	"fmt"
	"strings"

	"github.com/aws/aws-lambda-go/events"

	"github.com/idemkit/kit/idem/batch"
)

// KeyAttribute is the message attribute a producer sets to name a message's
// idempotency key.
const KeyAttribute = "IdempotencyKey"

// The message attributes a redrive sets on the copy of a dead-lettered
// message it sends back to the source queue (the idem command's dlq
// -redrive): the original's messageId and, from a FIFO queue, its
// MessageDeduplicationId. MessageIDKey and DeduplicationKey (so DefaultKey)
// read them in place of the copy's own, so that the copy is keyed as the
// original was: a copy of a message that was applied meanwhile, or a
// second copy, is a Duplicate, and the copy of a FIFO message can be sent
// with a deduplication id of its own, which SQS delivers within the
// 5 minutes it would drop the original's.
//
// A producer gains no key from them that it could not name already: a
// FIFO producer picks its MessageDeduplicationId, and the message
// attribute IdempotencyKey names any key under DefaultKey. Under
// MessageIDKey alone, which otherwise lets no producer choose a key, a
// producer that knows another message's messageId can key its own message
// the same: whichever comes second is a Duplicate (the same body) or a
// KeyReuse (another body, refused and in the end dead-lettered), never a
// second effect. Only a value shaped as SQS shapes a messageId (a UUID) is
// read as one. A consumer that lets producers choose no key at all keys by a
// KeyFunc of its own that reads rec.MessageId.
const (
	RedriveMessageIDAttribute       = "IdempotencyRedriveMessageId"
	RedriveDeduplicationIDAttribute = "IdempotencyRedriveDeduplicationId"
)

// ErrNoKey: the record carries no idempotency key.
var ErrNoKey = errors.New("sqsconsumer: no idempotency key")

// A KeyFunc returns a record's idempotency key (batch.KeyFunc).
type KeyFunc = batch.KeyFunc[events.SQSMessage]

// DefaultKey is the key order used when Options.Key is nil: AttributeKey,
// then DeduplicationKey, then MessageIDKey.
func DefaultKey(rec events.SQSMessage) (string, error) { return defaultKey(rec) }

var defaultKey = FirstKey(AttributeKey, DeduplicationKey, MessageIDKey)

// FirstKey returns the first non-empty key of fns, in order, stopping at the
// first error: a key that is present but unusable is not skipped over.
func FirstKey(fns ...KeyFunc) KeyFunc { return batch.FirstKey(fns...) }

// AttributeKey reads the message attribute IdempotencyKey, which must be a
// String (or a custom String type such as "String.uuid") that is not
// empty, nor only white space. It is
// the one key that survives a producer re-sending the same message.
func AttributeKey(rec events.SQSMessage) (string, error) {
	a, ok := rec.MessageAttributes[KeyAttribute]
	if !ok {
		return "", nil
	}
	if a.DataType != "String" && !strings.HasPrefix(a.DataType, "String.") {
		return "", fmt.Errorf("sqsconsumer: message attribute %s has data type %q; want String", KeyAttribute, a.DataType)
	}
	// A key of only white space is a producer's bug, not a key: refused
	// as the empty one is.
	if a.StringValue == nil || strings.TrimSpace(*a.StringValue) == "" {
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
// Standard queues have no MessageDeduplicationId, and the key is "". A
// redrive's copy is keyed by the original's id, its
// RedriveDeduplicationIDAttribute.
//
// SQS deduplicates for 5 minutes, the kit for the claim's retention: under
// content-based deduplication, two messages with the same body in one
// group are one message for that whole time.
func DeduplicationKey(rec events.SQSMessage) (string, error) {
	id, err := deduplicationID(rec)
	if id == "" || err != nil {
		return "", err
	}
	return groupEscaper.Replace(rec.Attributes["MessageGroupId"]) + "/" + id, nil
}

// deduplicationID is the record's MessageDeduplicationId, or the
// original's when the record is a redrive's copy.
func deduplicationID(rec events.SQSMessage) (string, error) {
	id := rec.Attributes["MessageDeduplicationId"]
	if id == "" {
		return "", nil
	}
	orig, err := redriveAttribute(rec, RedriveDeduplicationIDAttribute)
	switch {
	case err != nil || orig == "":
		return id, err
	case len(orig) > 128 || strings.ContainsFunc(orig, func(r rune) bool { return r < '!' || r > '~' }):
		// SQS's own rule for a MessageDeduplicationId.
		return "", fmt.Errorf("sqsconsumer: message attribute %s is not a deduplication id (1 to 128 printable ASCII characters)", RedriveDeduplicationIDAttribute)
	}
	return orig, nil
}

// redriveAttribute reads a redrive's String attribute: "" when absent.
func redriveAttribute(rec events.SQSMessage, name string) (string, error) {
	a, ok := rec.MessageAttributes[name]
	if !ok {
		return "", nil
	}
	if a.DataType != "String" || a.StringValue == nil || *a.StringValue == "" {
		return "", fmt.Errorf("sqsconsumer: message attribute %s is not a non-empty String", name)
	}
	return *a.StringValue, nil
}

var groupEscaper = strings.NewReplacer("%", "%25", "/", "%2F")

// QueueDeduplicationKey reads a FIFO queue's MessageDeduplicationId alone,
// the key DeduplicationKey gave before it held the message group. It is
// right only for a queue whose DeduplicationScope is queue (the default),
// where SQS too takes one id in two groups as one message; use it in
// Options.Key to keep the claims made under that key valid across an
// upgrade (see the package doc).
func QueueDeduplicationKey(rec events.SQSMessage) (string, error) {
	return deduplicationID(rec)
}

// MessageIDKey reads the record's messageId. SQS keeps it across
// redeliveries of one message, and into the dead-letter queue, but a
// producer that sends the message again gets a new one, so it dedupes
// redeliveries only. A redrive's copy is keyed by the original's
// messageId, its RedriveMessageIDAttribute.
func MessageIDKey(rec events.SQSMessage) (string, error) {
	orig, err := redriveAttribute(rec, RedriveMessageIDAttribute)
	switch {
	case err != nil:
		return "", err
	case orig == "":
		return rec.MessageId, nil
	case !isUUID(orig):
		return "", fmt.Errorf("sqsconsumer: message attribute %s is not a messageId (a UUID)", RedriveMessageIDAttribute)
	}
	return orig, nil
}

// isUUID says whether s has a UUID's shape, as SQS's messageIds do.
func isUUID(s string) bool {
	if len(s) != 36 {
		return false
	}
	for i := range len(s) {
		c := s[i]
		switch i {
		case 8, 13, 18, 23:
			if c != '-' {
				return false
			}
		default:
			if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
				return false
			}
		}
	}
	return true
}

// QueueName is the last segment of an SQS queue ARN
// ("arn:aws:sqs:us-east-1:123456789012:credits" → "credits").
func QueueName(arn string) string {
	return arn[strings.LastIndexByte(arn, ':')+1:]
}

func isFIFO(rec events.SQSMessage) bool {
	return strings.HasSuffix(rec.EventSourceARN, ".fifo")
}
