package idemtest

import (
	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// Received is a message a test received from a queue (ReceiveMessage, with
// MessageAttributeNames "All") as Lambda's event source mapping hands it
// to a function: an events.SQSMessage of the queue whose ARN is queueARN,
// for a handler built with idem/sqsconsumer. SQSMessage builds one from a
// body instead.
func Received(m sqstypes.Message, queueARN string) events.SQSMessage {
	rec := events.SQSMessage{
		MessageId: aws.ToString(m.MessageId), ReceiptHandle: aws.ToString(m.ReceiptHandle), Body: aws.ToString(m.Body),
		Md5OfBody: aws.ToString(m.MD5OfBody), Attributes: m.Attributes, MessageAttributes: map[string]events.SQSMessageAttribute{},
		EventSource: "aws:sqs", EventSourceARN: queueARN, AWSRegion: "us-east-1",
	}
	for k, v := range m.MessageAttributes {
		rec.MessageAttributes[k] = events.SQSMessageAttribute{DataType: aws.ToString(v.DataType), StringValue: v.StringValue, BinaryValue: v.BinaryValue}
	}
	return rec
}
