// Package types holds the few SQS shapes the local tooling reads and
// writes, with the SDK's names (service/sqs/types), so the tooling reads as
// if it used the SDK.
package types

// QueueAttributeName names a queue attribute.
type QueueAttributeName string

// The queue attributes the tooling reads.
const (
	QueueAttributeNameAll                                   QueueAttributeName = "All"
	QueueAttributeNameQueueArn                              QueueAttributeName = "QueueArn"
	QueueAttributeNameApproximateNumberOfMessages           QueueAttributeName = "ApproximateNumberOfMessages"
	QueueAttributeNameApproximateNumberOfMessagesNotVisible QueueAttributeName = "ApproximateNumberOfMessagesNotVisible"
	QueueAttributeNameApproximateNumberOfMessagesDelayed    QueueAttributeName = "ApproximateNumberOfMessagesDelayed"
)

// MessageSystemAttributeName names a message's system attribute.
type MessageSystemAttributeName string

// MessageSystemAttributeNameAll asks for every system attribute.
const MessageSystemAttributeNameAll MessageSystemAttributeName = "All"

// Message is a received message.
type Message struct {
	MessageId              *string                          `json:",omitempty"`
	ReceiptHandle          *string                          `json:",omitempty"`
	Body                   *string                          `json:",omitempty"`
	MD5OfBody              *string                          `json:",omitempty"`
	MD5OfMessageAttributes *string                          `json:",omitempty"`
	Attributes             map[string]string                `json:",omitempty"`
	MessageAttributes      map[string]MessageAttributeValue `json:",omitempty"`
}

// MessageAttributeValue is a message attribute; BinaryValue travels as
// base64, as encoding/json writes a []byte.
type MessageAttributeValue struct {
	DataType         *string  `json:",omitempty"`
	StringValue      *string  `json:",omitempty"`
	BinaryValue      []byte   `json:",omitempty"`
	StringListValues []string `json:",omitempty"`
	BinaryListValues [][]byte `json:",omitempty"`
}

// DeleteMessageBatchRequestEntry is one message of a DeleteMessageBatch.
type DeleteMessageBatchRequestEntry struct {
	Id            *string `json:",omitempty"`
	ReceiptHandle *string `json:",omitempty"`
}

// ChangeMessageVisibilityBatchRequestEntry is one message of a
// ChangeMessageVisibilityBatch.
type ChangeMessageVisibilityBatchRequestEntry struct {
	Id                *string `json:",omitempty"`
	ReceiptHandle     *string `json:",omitempty"`
	VisibilityTimeout int32
}

// BatchResultErrorEntry is an entry a batch call failed.
type BatchResultErrorEntry struct {
	Id          *string
	Code        *string
	Message     *string
	SenderFault bool
}
