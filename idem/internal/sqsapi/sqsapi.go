// Package sqsapi is the local tooling's SQS client: the seven calls the
// local stack and idem-local make (create and delete a queue, its
// attributes, send, receive, delete and change the visibility of a batch),
// in SQS's JSON protocol, signed with the SDK's own SigV4 signer, with the
// SDK's names. It exists so that this module requires no SQS SDK module
// that only its tooling uses: a user's module graph gets none.
package sqsapi

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"

	"github.com/idemkit/kit/idem/internal/sqsapi/types"
)

// Options configure a Client.
type Options struct {
	Region       string
	BaseEndpoint *string
	Credentials  aws.CredentialsProvider
	// HTTPClient sends the requests. Defaults to http.DefaultClient.
	HTTPClient *http.Client
}

// Client calls one SQS endpoint.
type Client struct{ o Options }

// New returns a Client; the endpoint is required, as the tooling only ever
// talks to a local or named server.
func New(o Options) *Client {
	if o.HTTPClient == nil {
		o.HTTPClient = http.DefaultClient
	}
	return &Client{o: o}
}

// APIError is an error SQS answered.
type APIError struct {
	Operation, Code, Message string
	StatusCode               int
}

func (e *APIError) Error() string {
	return fmt.Sprintf("sqs %s: %d %s: %s", e.Operation, e.StatusCode, e.Code, e.Message)
}

// call sends one operation and decodes its answer into out.
func (c *Client) call(ctx context.Context, op string, in, out any) error {
	if c.o.BaseEndpoint == nil || *c.o.BaseEndpoint == "" {
		return fmt.Errorf("sqs %s: no endpoint", op)
	}
	body, err := json.Marshal(in)
	if err != nil {
		return fmt.Errorf("sqs %s: %w", op, err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimSuffix(*c.o.BaseEndpoint, "/")+"/", bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("sqs %s: %w", op, err)
	}
	req.Header.Set("Content-Type", "application/x-amz-json-1.0")
	req.Header.Set("X-Amz-Target", "AmazonSQS."+op)
	if c.o.Credentials != nil {
		creds, err := c.o.Credentials.Retrieve(ctx)
		if err != nil {
			return fmt.Errorf("sqs %s: credentials: %w", op, err)
		}
		sum := sha256.Sum256(body)
		if err := v4.NewSigner().SignHTTP(ctx, creds, req, hex.EncodeToString(sum[:]), "sqs", c.o.Region, time.Now()); err != nil {
			return fmt.Errorf("sqs %s: sign: %w", op, err)
		}
	}
	resp, err := c.o.HTTPClient.Do(req)
	if err != nil {
		return fmt.Errorf("sqs %s: %w", op, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return fmt.Errorf("sqs %s: read the answer: %w", op, err)
	}
	if resp.StatusCode >= 300 {
		var e struct {
			Type    string `json:"__type"`
			Message string `json:"message"`
			Msg     string `json:"Message"`
		}
		_ = json.Unmarshal(b, &e)
		msg := e.Message
		if msg == "" {
			msg = e.Msg
		}
		return &APIError{Operation: op, Code: e.Type[strings.LastIndexByte(e.Type, '#')+1:], Message: msg, StatusCode: resp.StatusCode}
	}
	if out == nil || len(bytes.TrimSpace(b)) == 0 {
		return nil
	}
	if err := json.Unmarshal(b, out); err != nil {
		return fmt.Errorf("sqs %s: decode the answer: %w", op, err)
	}
	return nil
}

// CreateQueueInput names the queue and its attributes.
type CreateQueueInput struct {
	QueueName  *string           `json:",omitempty"`
	Attributes map[string]string `json:",omitempty"`
}

// CreateQueueOutput is the queue's URL.
type CreateQueueOutput struct{ QueueUrl *string }

// CreateQueue creates a queue, or returns the one of that name.
func (c *Client) CreateQueue(ctx context.Context, in *CreateQueueInput) (*CreateQueueOutput, error) {
	var out CreateQueueOutput
	return &out, c.call(ctx, "CreateQueue", in, &out)
}

// DeleteQueueInput names the queue.
type DeleteQueueInput struct {
	QueueUrl *string `json:",omitempty"`
}

// DeleteQueueOutput is empty.
type DeleteQueueOutput struct{}

// DeleteQueue deletes a queue.
func (c *Client) DeleteQueue(ctx context.Context, in *DeleteQueueInput) (*DeleteQueueOutput, error) {
	return &DeleteQueueOutput{}, c.call(ctx, "DeleteQueue", in, nil)
}

// GetQueueAttributesInput names the queue and the attributes.
type GetQueueAttributesInput struct {
	QueueUrl       *string                    `json:",omitempty"`
	AttributeNames []types.QueueAttributeName `json:",omitempty"`
}

// GetQueueAttributesOutput holds the attributes asked for.
type GetQueueAttributesOutput struct{ Attributes map[string]string }

// GetQueueAttributes reads a queue's attributes.
func (c *Client) GetQueueAttributes(ctx context.Context, in *GetQueueAttributesInput) (*GetQueueAttributesOutput, error) {
	var out GetQueueAttributesOutput
	return &out, c.call(ctx, "GetQueueAttributes", in, &out)
}

// SendMessageInput is a message to send.
type SendMessageInput struct {
	QueueUrl               *string                                `json:",omitempty"`
	MessageBody            *string                                `json:",omitempty"`
	MessageAttributes      map[string]types.MessageAttributeValue `json:",omitempty"`
	MessageGroupId         *string                                `json:",omitempty"`
	MessageDeduplicationId *string                                `json:",omitempty"`
	DelaySeconds           int32                                  `json:",omitempty"`
}

// SendMessageOutput is the sent message's id.
type SendMessageOutput struct {
	MessageId      *string
	SequenceNumber *string
}

// SendMessage sends a message.
func (c *Client) SendMessage(ctx context.Context, in *SendMessageInput) (*SendMessageOutput, error) {
	var out SendMessageOutput
	return &out, c.call(ctx, "SendMessage", in, &out)
}

// ReceiveMessageInput asks for up to MaxNumberOfMessages messages.
type ReceiveMessageInput struct {
	QueueUrl                    *string                            `json:",omitempty"`
	MaxNumberOfMessages         int32                              `json:",omitempty"`
	WaitTimeSeconds             int32                              `json:",omitempty"`
	VisibilityTimeout           int32                              `json:",omitempty"`
	MessageSystemAttributeNames []types.MessageSystemAttributeName `json:",omitempty"`
	MessageAttributeNames       []string                           `json:",omitempty"`
}

// ReceiveMessageOutput holds the messages received.
type ReceiveMessageOutput struct{ Messages []types.Message }

// ReceiveMessage receives messages, waiting up to WaitTimeSeconds.
func (c *Client) ReceiveMessage(ctx context.Context, in *ReceiveMessageInput) (*ReceiveMessageOutput, error) {
	var out ReceiveMessageOutput
	return &out, c.call(ctx, "ReceiveMessage", in, &out)
}

// DeleteMessageBatchInput names up to 10 messages to delete.
type DeleteMessageBatchInput struct {
	QueueUrl *string                                `json:",omitempty"`
	Entries  []types.DeleteMessageBatchRequestEntry `json:",omitempty"`
}

// DeleteMessageBatchOutput holds the entries that failed.
type DeleteMessageBatchOutput struct{ Failed []types.BatchResultErrorEntry }

// DeleteMessageBatch deletes up to 10 messages.
func (c *Client) DeleteMessageBatch(ctx context.Context, in *DeleteMessageBatchInput) (*DeleteMessageBatchOutput, error) {
	var out DeleteMessageBatchOutput
	return &out, c.call(ctx, "DeleteMessageBatch", in, &out)
}

// ChangeMessageVisibilityBatchInput names up to 10 messages.
type ChangeMessageVisibilityBatchInput struct {
	QueueUrl *string                                          `json:",omitempty"`
	Entries  []types.ChangeMessageVisibilityBatchRequestEntry `json:",omitempty"`
}

// ChangeMessageVisibilityBatchOutput holds the entries that failed.
type ChangeMessageVisibilityBatchOutput struct{ Failed []types.BatchResultErrorEntry }

// ChangeMessageVisibilityBatch makes up to 10 messages visible again after
// their VisibilityTimeout.
func (c *Client) ChangeMessageVisibilityBatch(ctx context.Context, in *ChangeMessageVisibilityBatchInput) (*ChangeMessageVisibilityBatchOutput, error) {
	var out ChangeMessageVisibilityBatchOutput
	if err := c.call(ctx, "ChangeMessageVisibilityBatch", in, &out); err != nil {
		return &out, err
	}
	if len(out.Failed) > 0 {
		return &out, errors.New(aws.ToString(out.Failed[0].Message))
	}
	return &out, nil
}
