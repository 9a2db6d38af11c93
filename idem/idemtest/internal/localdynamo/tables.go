package localdynamo

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// Table describes a table for CreateTable. Key attributes are strings (S).
type Table struct {
	Name         string // a prefix: a unique suffix is added
	HashKey      string
	RangeKey     string // "" for none
	TTLAttribute string // TTL enabled on it, when set
	Stream       bool   // its stream on, NEW_IMAGE, when set
}

var tableSeq atomic.Int64

// CreateTable creates an on-demand table under a unique name, waits until
// it is active, and returns the name: for tests, benchmarks and commands
// that share one server and must never meet.
func CreateTable(ctx context.Context, client *dynamodb.Client, t Table) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	name := fmt.Sprintf("%s-%d-%d", t.Name, time.Now().UnixNano()%1e6, tableSeq.Add(1))
	if len(name) > 255 {
		name = name[len(name)-255:]
	}
	in := &dynamodb.CreateTableInput{
		TableName:   aws.String(name),
		BillingMode: types.BillingModePayPerRequest,
		AttributeDefinitions: []types.AttributeDefinition{
			{AttributeName: aws.String(t.HashKey), AttributeType: types.ScalarAttributeTypeS},
		},
		KeySchema: []types.KeySchemaElement{{AttributeName: aws.String(t.HashKey), KeyType: types.KeyTypeHash}},
	}
	if t.Stream {
		in.StreamSpecification = &types.StreamSpecification{StreamEnabled: aws.Bool(true), StreamViewType: types.StreamViewTypeNewImage}
	}
	if t.RangeKey != "" {
		in.AttributeDefinitions = append(in.AttributeDefinitions, types.AttributeDefinition{AttributeName: aws.String(t.RangeKey), AttributeType: types.ScalarAttributeTypeS})
		in.KeySchema = append(in.KeySchema, types.KeySchemaElement{AttributeName: aws.String(t.RangeKey), KeyType: types.KeyTypeRange})
	}
	// The name is this call's own, so "already exists" means the SDK
	// retried a CreateTable whose first answer was lost under load.
	var inUse *types.ResourceInUseException
	if _, err := client.CreateTable(ctx, in); err != nil && !errors.As(err, &inUse) {
		return "", fmt.Errorf("create table %s: %w", name, err)
	}
	if err := dynamodb.NewTableExistsWaiter(client).Wait(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(name)}, 2*time.Minute); err != nil {
		return "", fmt.Errorf("table %s not active: %w", name, err)
	}
	if t.TTLAttribute != "" {
		_, err := client.UpdateTimeToLive(ctx, &dynamodb.UpdateTimeToLiveInput{
			TableName:               aws.String(name),
			TimeToLiveSpecification: &types.TimeToLiveSpecification{AttributeName: aws.String(t.TTLAttribute), Enabled: aws.Bool(true)},
		})
		// As DynamoDB does, the server refuses to enable TTL twice: a refusal
		// of an SDK retry whose first answer was lost under load is success
		// when TTL is on, on this attribute.
		if err != nil && !ttlOn(ctx, client, name, t.TTLAttribute) {
			return "", fmt.Errorf("enable TTL on %s: %w", name, err)
		}
	}
	return name, nil
}

// ExternalEndpoint is the DynamoDB endpoint the environment names
// ($AWS_ENDPOINT_URL_DYNAMODB, else $AWS_ENDPOINT_URL), or "" when the
// caller should start a local server.
func ExternalEndpoint() string {
	if ep := os.Getenv("AWS_ENDPOINT_URL_DYNAMODB"); ep != "" {
		return ep
	}
	return os.Getenv("AWS_ENDPOINT_URL")
}

// ttlOn says whether table's TTL is enabled (or being enabled) on attr.
func ttlOn(ctx context.Context, client *dynamodb.Client, table, attr string) bool {
	out, err := client.DescribeTimeToLive(ctx, &dynamodb.DescribeTimeToLiveInput{TableName: aws.String(table)})
	if err != nil || out.TimeToLiveDescription == nil {
		return false
	}
	d := out.TimeToLiveDescription
	on := d.TimeToLiveStatus == types.TimeToLiveStatusEnabled || d.TimeToLiveStatus == types.TimeToLiveStatusEnabling
	return on && aws.ToString(d.AttributeName) == attr
}
