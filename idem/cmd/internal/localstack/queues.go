package localstack

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// queueAttributes are the AWS::SQS::Queue properties that are CreateQueue
// attributes of the same name.
var queueAttributes = []string{
	"ContentBasedDeduplication", "DeduplicationScope", "DelaySeconds", "FifoQueue", "FifoThroughputLimit",
	"KmsDataKeyReusePeriodSeconds", "KmsMasterKeyId", "MaximumMessageSize", "MessageRetentionPeriod",
	"ReceiveMessageWaitTimeSeconds", "RedriveAllowPolicy", "RedrivePolicy", "SqsManagedSseEnabled", "VisibilityTimeout",
}

func (p *provisioner) createQueue(ctx context.Context, res Resource) (*ResourceValue, error) {
	props, err := p.props(res)
	if err != nil {
		return nil, err
	}
	attrs, err := queueInput(props)
	if err != nil {
		return nil, err
	}
	name := scalarString(props["QueueName"])
	if name == "" {
		name = p.stackName + "-" + res.LogicalID
		if attrs["FifoQueue"] == "true" {
			name += ".fifo"
		}
	}
	out, err := p.sqs.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(name), Attributes: attrs})
	if err != nil {
		return nil, fmt.Errorf("create queue %s: %w", name, err)
	}
	url := aws.ToString(out.QueueUrl)
	got, err := p.sqs.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{
		QueueUrl:       out.QueueUrl,
		AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameQueueArn},
	})
	if err != nil {
		return nil, fmt.Errorf("queue %s: %w", name, err)
	}
	arn := got.Attributes[string(sqstypes.QueueAttributeNameQueueArn)]
	p.logf("queue %s created (%s)", name, res.LogicalID)
	p.Queues[res.LogicalID] = &Queue{LogicalID: res.LogicalID, Name: name, URL: url, ARN: arn, Attributes: attrs}
	return &ResourceValue{Ref: url, Attrs: map[string]string{"Arn": arn, "QueueName": name, "QueueUrl": url}}, nil
}

// queueInput reads a queue's CreateQueue attributes from its template
// properties; the policies are JSON documents in SQS and may be YAML
// mappings in a template.
func queueInput(props map[string]any) (map[string]string, error) {
	attrs := map[string]string{}
	for _, k := range queueAttributes {
		v, ok := props[k]
		if !ok {
			continue
		}
		switch v.(type) {
		case map[string]any, []any:
			b, err := json.Marshal(v)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", k, err)
			}
			attrs[k] = string(b)
		default:
			attrs[k] = scalarString(v)
		}
	}
	if rp, ok := attrs["RedrivePolicy"]; ok {
		var pol struct {
			DeadLetterTargetArn string `json:"deadLetterTargetArn"`
			MaxReceiveCount     any    `json:"maxReceiveCount"`
		}
		if err := json.Unmarshal([]byte(rp), &pol); err != nil || pol.DeadLetterTargetArn == "" {
			return nil, fmt.Errorf("RedrivePolicy %s: want deadLetterTargetArn and maxReceiveCount", rp)
		}
		if _, err := strconv.Atoi(scalarString(jsonNumber(pol.MaxReceiveCount))); err != nil {
			return nil, fmt.Errorf("RedrivePolicy maxReceiveCount %v is not a whole number", pol.MaxReceiveCount)
		}
	}
	return attrs, nil
}

func jsonNumber(v any) any {
	if f, ok := v.(float64); ok && f == float64(int64(f)) {
		return int64(f)
	}
	return v
}

// MaxReceiveCount is the queue's RedrivePolicy maxReceiveCount, or 0 when it
// has no dead-letter queue.
func (q *Queue) MaxReceiveCount() int {
	var pol struct {
		MaxReceiveCount json.Number `json:"maxReceiveCount"`
	}
	if err := json.Unmarshal([]byte(q.Attributes["RedrivePolicy"]), &pol); err != nil {
		// maxReceiveCount may be a JSON string
		var s struct {
			MaxReceiveCount string `json:"maxReceiveCount"`
		}
		if json.Unmarshal([]byte(q.Attributes["RedrivePolicy"]), &s) != nil {
			return 0
		}
		pol.MaxReceiveCount = json.Number(s.MaxReceiveCount)
	}
	n, _ := pol.MaxReceiveCount.Int64()
	return int(n)
}

// IsFIFO reports whether the queue is a FIFO queue.
func (q *Queue) IsFIFO() bool {
	return q.Attributes["FifoQueue"] == "true" || strings.HasSuffix(q.Name, ".fifo")
}

// sortedKeys returns m's keys in order.
