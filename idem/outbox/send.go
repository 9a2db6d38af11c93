package outbox

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"
	ebtypes "github.com/aws/aws-sdk-go-v2/service/eventbridge/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go"
)

// send sends items, all bound for one destination, in one call; on
// failure, k is the first item not sent. Each item's send is a span of
// the trace its delivery began, and carries that trace on to the consumer.
func (r *Relay) send(ctx context.Context, items []item) (k int, err error) {
	spans := r.startSends(ctx, items)
	defer func() { endSends(spans, k, err) }()
	if isEventBridge(items[0].destination) {
		return r.putEvents(ctx, items)
	}
	return r.sendMessages(ctx, items)
}

func (r *Relay) sendMessages(ctx context.Context, items []item) (int, error) {
	dest := items[0].destination
	if r.o.SQS == nil {
		return 0, &SendError{ID: items[0].itemID, Destination: dest, Err: errors.New("the relay has no SQS client (Options.SQS)")}
	}
	entries := make([]sqstypes.SendMessageBatchRequestEntry, len(items))
	for k, it := range items {
		attrs := map[string]sqstypes.MessageAttributeValue{"IdempotencyKey": stringAttr(it.itemID)}
		if it.typ != "" {
			attrs["Type"] = stringAttr(it.typ)
		}
		for name, v := range it.attributes {
			attrs[name] = stringAttr(v)
		}
		entries[k] = sqstypes.SendMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(k)), MessageBody: aws.String(it.body), MessageAttributes: attrs}
		if it.traceHeader != "" { // a system attribute: it takes none of the message's 10
			entries[k].MessageSystemAttributes = map[string]sqstypes.MessageSystemAttributeValue{
				"AWSTraceHeader": {DataType: aws.String("String"), StringValue: aws.String(it.traceHeader)}}
		}
		if isFIFO(dest) {
			entries[k].MessageDeduplicationId = aws.String(it.itemID)
			entries[k].MessageGroupId = aws.String(groupID(it.group))
		}
	}
	out, err := r.o.SQS.SendMessageBatch(ctx, &sqs.SendMessageBatchInput{QueueUrl: aws.String(dest), Entries: entries})
	if err != nil {
		return 0, &SendError{ID: items[0].itemID, Destination: dest, SenderFault: clientFault(err), Err: err}
	}
	first, code, msg, fault := len(items), "", "", false
	for _, f := range out.Failed {
		k, err := strconv.Atoi(aws.ToString(f.Id))
		if err != nil || k < 0 || k >= len(items) {
			k = 0 // an answer that names no entry we sent: count it against the first
		}
		if k < first {
			first, code, msg, fault = k, aws.ToString(f.Code), aws.ToString(f.Message), f.SenderFault
		}
	}
	if first < len(items) {
		return first, &SendError{ID: items[first].itemID, Destination: dest, Code: code, SenderFault: fault, Err: fmt.Errorf("SQS did not take it: %s %s", code, msg)}
	}
	if n := len(out.Successful); n != len(items) {
		return 0, &SendError{ID: items[0].itemID, Destination: dest, Err: fmt.Errorf("SQS answered %d successes for %d entries", n, len(items))}
	}
	return 0, nil
}

func stringAttr(v string) sqstypes.MessageAttributeValue {
	return sqstypes.MessageAttributeValue{DataType: aws.String("String"), StringValue: aws.String(v)}
}

func (r *Relay) putEvents(ctx context.Context, items []item) (int, error) {
	dest := items[0].destination
	if r.o.EventBridge == nil {
		return 0, &SendError{ID: items[0].itemID, Destination: dest, Err: errors.New("the relay has no EventBridge client (Options.EventBridge)")}
	}
	bus := dest[len(eventBridgePrefix):]
	entries := make([]ebtypes.PutEventsRequestEntry, len(items))
	for k, it := range items {
		entries[k] = ebtypes.PutEventsRequestEntry{
			EventBusName: aws.String(bus), Source: aws.String(r.o.EventSource),
			DetailType: aws.String(it.typ), Detail: aws.String(detail(it)),
		}
		if t, err := time.Parse(time.RFC3339Nano, it.createdAt); err == nil {
			entries[k].Time = &t
		}
		if it.traceHeader != "" { // for X-Ray, which follows it to targets that trace; the event delivered does not carry it
			entries[k].TraceHeader = aws.String(it.traceHeader)
		}
	}
	out, err := r.o.EventBridge.PutEvents(ctx, &eventbridge.PutEventsInput{Entries: entries})
	if err != nil {
		return 0, &SendError{ID: items[0].itemID, Destination: dest, SenderFault: clientFault(err), Err: err}
	}
	if len(out.Entries) != len(items) {
		return 0, &SendError{ID: items[0].itemID, Destination: dest, Err: fmt.Errorf("EventBridge answered %d entries for %d", len(out.Entries), len(items))}
	}
	for k, e := range out.Entries {
		if e.ErrorCode != nil || e.EventId == nil {
			code := aws.ToString(e.ErrorCode)
			// EventBridge names these two retryable; the others are the entry's.
			fault := code != "InternalFailure" && code != "ThrottlingException"
			return k, &SendError{ID: items[k].itemID, Destination: dest, Code: code, SenderFault: fault, Err: fmt.Errorf("EventBridge did not take it: %s %s", code, aws.ToString(e.ErrorMessage))}
		}
	}
	return 0, nil
}

// clientFault says whether err is the service's refusal of the request
// itself (a 4xx other than throttling), which no retry mends.
func clientFault(err error) bool {
	var ae smithy.APIError
	if !errors.As(err, &ae) || ae.ErrorFault() != smithy.FaultClient {
		return false
	}
	switch ae.ErrorCode() {
	case "ThrottlingException", "Throttling", "RequestThrottled", "KmsThrottled":
		return false
	}
	return true
}
