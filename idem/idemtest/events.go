package idemtest

import (
	"crypto/md5"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/events"
)

// The events Lambda hands a function, built from what a test cares about:
// aws-lambda-go's own types, filled as the event source would fill them.
// Ids derive from the content, so the same arguments build the same event,
// as a redelivery is; except for SQSMessage and EventBridgeEvent, each of
// whose calls is another send (their docs).

// SQSMessage is a record of queue (a name, such as "credits", or
// "credits.fifo"), with body and string message attributes (an
// "IdempotencyKey" among them, say), as the SQS event source mapping hands
// it over. Each call builds another message, as each SendMessage does,
// with a messageId of its own: two messages never share one, even with
// equal bodies and attributes (a batch holding both has one ItemIdentifier
// for each, as SQS sends it). The id derives from the queue, the body, the
// attributes and how many messages of that content the test process built
// before: the first message of a content has the same id in every run. A
// redelivery is the same record handed over again, and keeps its id:
// Replay's, or the value built once and sent again.
func SQSMessage(queue, body string, attrs map[string]string) events.SQSMessage {
	mid := sqsMessageID(queue, body, attrs)
	rec := events.SQSMessage{
		MessageId: mid, ReceiptHandle: stableID("receipt", mid), Body: body,
		Md5OfBody: md5hex(body), EventSource: "aws:sqs", EventSourceARN: "arn:aws:sqs:us-east-1:123456789012:" + queue,
		AWSRegion: "us-east-1", Attributes: map[string]string{"ApproximateReceiveCount": "1", "SentTimestamp": "1767225600000"},
		MessageAttributes: map[string]events.SQSMessageAttribute{},
	}
	for k, v := range attrs {
		rec.MessageAttributes[k] = events.SQSMessageAttribute{DataType: "String", StringValue: &v}
	}
	return rec
}

// sent counts the SQS messages built of each content (by the first one's
// id), so that the next of a content gets another id.
var sent struct {
	sync.Mutex
	n map[string]int
}

// sqsMessageID is the messageId of the next message of this content: the
// content's id for the first, then the content's and the message's ordinal
// (an odd number of parts, which no content's id has).
func sqsMessageID(queue, body string, attrs map[string]string) string {
	parts := []string{queue, body}
	for _, k := range slices.Sorted(maps.Keys(attrs)) {
		parts = append(parts, k, attrs[k])
	}
	first := stableID("sqs", parts...)
	sent.Lock()
	if sent.n == nil {
		sent.n = map[string]int{}
	}
	n := sent.n[first]
	sent.n[first] = n + 1
	sent.Unlock()
	if n == 0 {
		return first
	}
	return stableID("sqs", append(parts, strconv.Itoa(n))...)
}

// FIFO is rec as a FIFO queue hands it over: in message group group, under
// deduplication id dedup.
func FIFO(rec events.SQSMessage, group, dedup string) events.SQSMessage {
	attrs := map[string]string{"MessageGroupId": group, "MessageDeduplicationId": dedup}
	for k, v := range rec.Attributes {
		attrs[k] = v
	}
	rec.Attributes = attrs
	return rec
}

// SQSEvent is a batch of records.
func SQSEvent(recs ...events.SQSMessage) events.SQSEvent { return events.SQSEvent{Records: recs} }

// HTTPRequest is an HTTP API request (payload format 2.0), or a function
// URL's, with body and headers (names in lower case, as API Gateway sends
// them), for the route "METHOD path".
func HTTPRequest(method, path, body string, headers map[string]string) events.APIGatewayV2HTTPRequest {
	e := events.APIGatewayV2HTTPRequest{Version: "2.0", RouteKey: method + " " + path, RawPath: path, Body: body, Headers: map[string]string{}}
	for k, v := range headers {
		e.Headers[strings.ToLower(k)] = v
	}
	e.RequestContext.HTTP.Method, e.RequestContext.HTTP.Path = method, path
	e.RequestContext.Stage, e.RequestContext.RequestID = "$default", stableID("request", method, path, body)
	return e
}

// RESTRequest is a REST API proxy request (payload format 1.0) with body
// and headers as the client wrote them, for the resource path, as the JSON
// Lambda hands the function: the event webhook.Mux's Handle serves
// (Replay(ctx, 3, mux.Handle, RESTRequest(…))).
func RESTRequest(method, path, body string, headers map[string]string) json.RawMessage {
	e := events.APIGatewayProxyRequest{HTTPMethod: method, Resource: path, Path: path, Body: body,
		Headers: map[string]string{}, MultiValueHeaders: map[string][]string{}}
	for k, v := range headers {
		e.Headers[k], e.MultiValueHeaders[k] = v, []string{v}
	}
	e.RequestContext.RequestID = stableID("request", method, path, body)
	raw, _ := json.Marshal(e) // strings and maps of strings: it cannot fail
	return raw
}

// ALBRequest is an Application Load Balancer's request to a Lambda target
// group, for method and path, with headers as a target group sends them by
// default: one value per name, in lower case. Its body is base64-encoded
// as the load balancer encodes it: unless the content-type is text/*,
// application/json, application/javascript or application/xml and no
// content-encoding is set. ALBMultiValue makes it what a target group with
// multi-value headers sends.
func ALBRequest(method, path, body string, headers map[string]string) events.ALBTargetGroupRequest {
	e := events.ALBTargetGroupRequest{HTTPMethod: method, Path: path, Body: body, Headers: map[string]string{}}
	for k, v := range headers {
		e.Headers[strings.ToLower(k)] = v
	}
	e.RequestContext.ELB.TargetGroupArn = "arn:aws:elasticloadbalancing:us-east-1:123456789012:targetgroup/webhooks/6d0ecf831eec9f09"
	if albEncodes(e.Headers) {
		e.Body, e.IsBase64Encoded = base64.StdEncoding.EncodeToString([]byte(body)), true
	}
	return e
}

// albEncodes says whether the load balancer sends a body with these
// headers base64-encoded.
func albEncodes(h map[string]string) bool {
	if _, ok := h["content-encoding"]; ok {
		return true
	}
	mt, _, _ := strings.Cut(h["content-type"], ";")
	switch mt = strings.ToLower(strings.TrimSpace(mt)); {
	case strings.HasPrefix(mt, "text/"), mt == "application/json", mt == "application/javascript", mt == "application/xml":
		return false
	}
	return true
}

// ALBMultiValue is e as a target group with multi-value headers
// (lambda.multi_value_headers.enabled) sends it: every header and query
// parameter as a list, in multiValueHeaders and
// multiValueQueryStringParameters only. Append to a list to send a header
// twice.
func ALBMultiValue(e events.ALBTargetGroupRequest) events.ALBTargetGroupRequest {
	e.MultiValueHeaders = make(map[string][]string, len(e.Headers))
	for k, v := range e.Headers {
		e.MultiValueHeaders[k] = []string{v}
	}
	if e.QueryStringParameters != nil {
		e.MultiValueQueryStringParameters = make(map[string][]string, len(e.QueryStringParameters))
		for k, v := range e.QueryStringParameters {
			e.MultiValueQueryStringParameters[k] = []string{v}
		}
	}
	e.Headers, e.QueryStringParameters = nil, nil
	return e
}

// EventBridgeEvent is an event of source and detailType whose detail is
// v's JSON (or v itself when it is a json.RawMessage). Each call gives a
// new envelope, as each PutEvents does: another id, the time now.
func EventBridgeEvent(source, detailType string, v any) (events.EventBridgeEvent, error) {
	detail, ok := v.(json.RawMessage)
	if !ok {
		b, err := json.Marshal(v)
		if err != nil {
			return events.EventBridgeEvent{}, fmt.Errorf("idemtest: the event's detail: %w", err)
		}
		detail = b
	}
	now := time.Now().UTC()
	return events.EventBridgeEvent{Version: "0", ID: stableID("event", source, detailType, string(detail), now.Format(time.RFC3339Nano)),
		DetailType: detailType, Source: source, AccountID: "123456789012", Time: now.Truncate(time.Second), Region: "us-east-1",
		Resources: []string{}, Detail: detail}, nil
}

// StreamRecord is a DynamoDB stream record of table: an INSERT of
// newImage (a MODIFY when oldImage is not nil), with the sequence number
// seq, as the stream's event source mapping hands it over.
func StreamRecord(table, seq string, oldImage, newImage map[string]events.DynamoDBAttributeValue) events.DynamoDBEventRecord {
	name, view := "INSERT", "NEW_IMAGE"
	if oldImage != nil {
		name, view = "MODIFY", "NEW_AND_OLD_IMAGES"
	}
	return events.DynamoDBEventRecord{
		EventID: stableID("stream", table, seq), EventName: name, EventVersion: "1.1", EventSource: "aws:dynamodb", AWSRegion: "us-east-1",
		EventSourceArn: "arn:aws:dynamodb:us-east-1:123456789012:table/" + table + "/stream/2026-01-01T00:00:00.000",
		Change: events.DynamoDBStreamRecord{SequenceNumber: seq, NewImage: newImage, OldImage: oldImage, StreamViewType: view,
			ApproximateCreationDateTime: events.SecondsEpochTime{Time: time.Unix(1767225600, 0)}},
	}
}

// DynamoDBEvent is a batch of stream records.
func DynamoDBEvent(recs ...events.DynamoDBEventRecord) events.DynamoDBEvent {
	return events.DynamoDBEvent{Records: recs}
}

// stableID is a stable id of parts: the same parts, the same id.
func stableID(kind string, parts ...string) string {
	h := sha256.New()
	for _, p := range append([]string{kind}, parts...) {
		fmt.Fprintf(h, "%d:%s", len(p), p)
	}
	s := hex.EncodeToString(h.Sum(nil))
	return s[:8] + "-" + s[8:12] + "-" + s[12:16] + "-" + s[16:20] + "-" + s[20:32]
}

func md5hex(s string) string {
	sum := md5.Sum([]byte(s))
	return hex.EncodeToString(sum[:])
}
