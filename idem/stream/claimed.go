package stream

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/aws/aws-lambda-go/events"
	"go.opentelemetry.io/otel/attribute"

	"github.com/idemkit/kit/idem"
	"github.com/idemkit/kit/idem/internal/adapt"
	"github.com/idemkit/kit/idem/internal/seam"
)

// ClaimedOptions configure Claimed. Every default is written once, on its
// field, and applied in Claimed.
type ClaimedOptions struct {
	// Source names the consumer's claims, for metrics and, unless the
	// Store sets a Scope, as the scope of their keys: two consumers of one
	// stream that share a processed-ids table need distinct Sources, or
	// each would take the other's claims for its own. Claimed refuses one
	// the Store cannot take as a message's Source. Defaults to the table's
	// name, read from each record's eventSourceARN.
	Source string
}

// Claimed makes h's effect commit once per DynamoDB stream record: each
// record is claimed in store under its eventID, which Lambda's retries of
// a batch keep, together with h's writes, so a record run again (after a
// whole-invoke failure, a bisect, or a duplicate delivery of the stream)
// is a Duplicate. The claim's payload is the record's SequenceNumber,
// which belongs to its eventID, so no key reuse is looked for.
func Claimed(store *idem.Store, h func(context.Context, events.DynamoDBEventRecord) (idem.Effect, error), optFns ...func(*ClaimedOptions)) (DynamoDBRecordHandler, error) {
	if h == nil {
		return nil, errors.New("stream: Claimed: nil handler")
	}
	var o ClaimedOptions
	for _, fn := range optFns {
		fn(&o)
	}
	proc, err := adapt.New(store, "ClaimedOptions", o.Source, nil)
	if err != nil {
		return nil, fmt.Errorf("stream: Claimed: %w", err)
	}
	return func(ctx context.Context, rec events.DynamoDBEventRecord) error {
		msg, err := recordMessage(o.Source, rec)
		if err != nil {
			proc.Fail(ctx, msg, err)
			return err
		}
		if proc.Tracing(ctx) {
			ctx = seam.WithSpan(ctx, recordSpan(rec))
		}
		_, err = proc.Process(ctx, msg, func(ctx context.Context, _ idem.Message) (idem.Effect, error) { return h(ctx, rec) })
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

// recordAttrs are a record's span attributes by OpenTelemetry's FaaS
// conventions: a datasource trigger, the table.
func recordAttrs(rec events.DynamoDBEventRecord) []attribute.KeyValue {
	return []attribute.KeyValue{
		attribute.String("faas.trigger", "datasource"), attribute.String("faas.document.collection", TableName(rec.EventSourceArn)),
		attribute.String("faas.document.operation", documentOperation[rec.EventName]), attribute.String("messaging.message.id", rec.EventID)}
}

// documentOperation is OpenTelemetry's faas.document.operation for a
// stream record's eventName.
var documentOperation = map[string]string{"INSERT": "insert", "MODIFY": "edit", "REMOVE": "delete"}
