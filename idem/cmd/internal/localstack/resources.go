package localstack

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/aws/aws-sdk-go-v2/service/sqs"
)

// The resource types the stack creates on the local servers.
const (
	typeTable       = "AWS::DynamoDB::Table"
	typeSimpleTable = "AWS::Serverless::SimpleTable"
	typeQueue       = "AWS::SQS::Queue"
	typeFunction    = "AWS::Serverless::Function"
)

// Table is a DynamoDB table the stack created (or found) for a template
// resource.
type Table struct {
	LogicalID string
	Name      string
	ARN       string
	// Input is what the stack sent to CreateTable, read from the template.
	Input *dynamodb.CreateTableInput
	// TTLAttribute is the attribute TTL was enabled on, or "".
	TTLAttribute string
	// StreamARN is the table's latest stream (its StreamArn), or "" when
	// the template gives it no StreamSpecification; StreamViewType is the
	// stream's view type.
	StreamARN      string
	StreamViewType string
}

// Queue is an SQS queue the stack created for a template resource.
type Queue struct {
	LogicalID string
	Name      string
	URL       string
	ARN       string
	// Attributes are the attributes the stack sent to CreateQueue, read
	// from the template.
	Attributes map[string]string
}

// ResourceConfig configures CreateResources.
type ResourceConfig struct {
	// DynamoDB and SQS are the clients of the endpoints to create the
	// tables and queues on; SQS may be nil when the template has no queue.
	DynamoDB *dynamodb.Client
	SQS      *sqs.Client
	// StackName prefixes the names of the tables and queues the template
	// leaves unnamed ("<StackName>-<LogicalId>"), and is AWS::StackName.
	StackName string
	// Region is AWS::Region.
	Region string
	// Parameters override the template's parameter defaults.
	Parameters map[string]string
	// Logf receives one line per resource created. Defaults to none.
	Logf func(format string, args ...any)
}

// Resources are a template's tables and queues, created on local endpoints,
// and the values its intrinsic functions resolve to there.
type Resources struct {
	// Tables and Queues are by logical id.
	Tables map[string]*Table
	Queues map[string]*Queue

	p *provisioner
}

// CreateResources creates the template's AWS::DynamoDB::Table,
// AWS::Serverless::SimpleTable and AWS::SQS::Queue resources from their own
// properties, each after the resources it refers to. A table that exists
// already is kept as it is.
func CreateResources(ctx context.Context, t *Template, c ResourceConfig) (*Resources, error) {
	if c.Logf == nil {
		c.Logf = func(string, ...any) {}
	}
	pseudo := map[string]string{
		"AWS::Region":    c.Region,
		"AWS::AccountId": AccountID,
		"AWS::StackName": c.StackName,
		"AWS::StackId":   fmt.Sprintf("arn:aws:cloudformation:%s:%s:stack/%s/local", c.Region, AccountID, c.StackName),
		"AWS::Partition": "aws",
		"AWS::URLSuffix": "amazonaws.com",
	}
	r, err := newResolver(t, c.Parameters, pseudo)
	if err != nil {
		return nil, fmt.Errorf("localstack: %w", err)
	}
	res := &Resources{Tables: map[string]*Table{}, Queues: map[string]*Queue{}}
	p := &provisioner{t: t, r: r, stackName: c.StackName, region: c.Region, account: AccountID,
		ddb: c.DynamoDB, sqs: c.SQS, logf: c.Logf, values: map[string]*ResourceValue{}, busy: map[string]bool{},
		Tables: res.Tables, Queues: res.Queues, skipped: map[string]bool{}}
	res.p = p
	r.resource = func(id string) (*ResourceValue, error) { return p.resource(ctx, id) }
	if c.SQS == nil && len(t.OfType(typeQueue)) > 0 {
		return nil, fmt.Errorf("localstack: the template has queues and there is no SQS endpoint")
	}
	if err := p.createAll(ctx); err != nil {
		return nil, fmt.Errorf("localstack: %w", err)
	}
	return res, nil
}

// Eval evaluates the intrinsic functions in a template value (such as a
// resource's Properties) against the local resources.
func (r *Resources) Eval(v any) (any, error) { return r.p.r.eval(v) }

// provisioner creates a template's tables and queues, each when it is first
// needed: a queue's RedrivePolicy naming its dead-letter queue's Arn creates
// that queue first.
type provisioner struct {
	t         *Template
	r         *resolver
	stackName string
	region    string
	account   string
	ddb       *dynamodb.Client
	sqs       *sqs.Client
	logf      func(format string, args ...any)

	values  map[string]*ResourceValue
	busy    map[string]bool
	Tables  map[string]*Table
	Queues  map[string]*Queue
	skipped map[string]bool // resources whose Condition is false
}

func (p *provisioner) resource(ctx context.Context, id string) (*ResourceValue, error) {
	if v, ok := p.values[id]; ok {
		return v, nil
	}
	if p.busy[id] {
		return nil, fmt.Errorf("%s: circular reference", id)
	}
	p.busy[id] = true
	defer delete(p.busy, id)
	res := p.t.Resources[id]
	if res.Condition != "" {
		ok, err := p.r.condition(res.Condition)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", id, err)
		}
		if !ok {
			p.skipped[id] = true
			return nil, fmt.Errorf("%s is not created: its condition %s is false", id, res.Condition)
		}
	}
	var v *ResourceValue
	var err error
	switch res.Type {
	case typeTable, typeSimpleTable:
		v, err = p.createTable(ctx, res)
	case typeQueue:
		v, err = p.createQueue(ctx, res)
	default:
		v = p.placeholder(res)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", id, err)
	}
	p.values[id] = v
	return v, nil
}

// placeholder stands for a resource the local stack does not create (a
// role, a log group, an alarm, the function itself): its Ref is a name
// derived from the logical id, its Arn an ARN of the right shape.
func (p *provisioner) placeholder(res Resource) *ResourceValue {
	name := p.stackName + "-" + res.LogicalID
	service := "cloudformation"
	if parts := strings.Split(res.Type, "::"); len(parts) == 3 {
		service = strings.ToLower(parts[1])
	}
	switch res.Type {
	case typeFunction, "AWS::Lambda::Function":
		service = "lambda"
		name = "function:" + name
	case "AWS::Logs::LogGroup":
		name = "log-group:/aws/lambda/" + p.stackName + "-" + res.LogicalID + ":*"
	}
	arn := fmt.Sprintf("arn:aws:%s:%s:%s:%s", service, p.region, p.account, name)
	return &ResourceValue{Ref: p.stackName + "-" + res.LogicalID, Attrs: map[string]string{"Arn": arn}}
}

// createAll creates every table and queue of the template.
func (p *provisioner) createAll(ctx context.Context) error {
	var errs []error
	for _, typ := range []string{typeTable, typeSimpleTable, typeQueue} {
		for _, id := range p.t.OfType(typ) {
			if _, err := p.resource(ctx, id); err != nil && !p.skipped[id] {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

func (p *provisioner) props(res Resource) (map[string]any, error) {
	v, err := p.r.eval(res.Properties)
	if err != nil {
		return nil, err
	}
	return mapOf(v), nil
}

func (p *provisioner) createTable(ctx context.Context, res Resource) (*ResourceValue, error) {
	props, err := p.props(res)
	if err != nil {
		return nil, err
	}
	in, ttl, pitr, err := tableInput(res.Type, props)
	if err != nil {
		return nil, err
	}
	if in.TableName == nil {
		in.TableName = aws.String(p.stackName + "-" + res.LogicalID)
	}
	name := *in.TableName
	_, err = p.ddb.CreateTable(ctx, in)
	var inUse *ddbtypes.ResourceInUseException
	switch {
	case errors.As(err, &inUse):
		p.logf("table %s exists already: kept as it is", name)
		if err := p.enableStream(ctx, in); err != nil {
			return nil, err
		}
	case err != nil:
		return nil, fmt.Errorf("create table %s: %w", name, err)
	default:
		p.logf("table %s created (%s)", name, res.LogicalID)
	}
	if err := dynamodb.NewTableExistsWaiter(p.ddb).Wait(ctx, &dynamodb.DescribeTableInput{TableName: in.TableName}, defaultWait); err != nil {
		return nil, fmt.Errorf("table %s not active: %w", name, err)
	}
	if ttl != "" {
		_, err := p.ddb.UpdateTimeToLive(ctx, &dynamodb.UpdateTimeToLiveInput{
			TableName:               in.TableName,
			TimeToLiveSpecification: &ddbtypes.TimeToLiveSpecification{AttributeName: aws.String(ttl), Enabled: aws.Bool(true)},
		})
		if err != nil && !strings.Contains(err.Error(), "already enabled") {
			return nil, fmt.Errorf("enable TTL on %s: %w", name, err)
		}
	}
	if pitr {
		_, err := p.ddb.UpdateContinuousBackups(ctx, &dynamodb.UpdateContinuousBackupsInput{
			TableName:                        in.TableName,
			PointInTimeRecoverySpecification: &ddbtypes.PointInTimeRecoverySpecification{PointInTimeRecoveryEnabled: aws.Bool(true)},
		})
		if err != nil {
			p.logf("table %s: point-in-time recovery not enabled locally: %v", name, err)
		}
	}
	desc, err := p.ddb.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: in.TableName})
	if err != nil {
		return nil, fmt.Errorf("describe table %s: %w", name, err)
	}
	v := &ResourceValue{Ref: name, Attrs: map[string]string{"Arn": aws.ToString(desc.Table.TableArn)}}
	tb := &Table{LogicalID: res.LogicalID, Name: name, ARN: v.Attrs["Arn"], Input: in, TTLAttribute: ttl}
	if desc.Table.LatestStreamArn != nil {
		v.Attrs["StreamArn"] = *desc.Table.LatestStreamArn
		tb.StreamARN = v.Attrs["StreamArn"]
		if ss := desc.Table.StreamSpecification; ss != nil {
			tb.StreamViewType = string(ss.StreamViewType)
		}
	}
	p.Tables[res.LogicalID] = tb
	return v, nil
}

// enableStream turns on the stream the template asks for on a table that
// exists already without one (made by an earlier run of an older
// template), so that its StreamArn resolves.
func (p *provisioner) enableStream(ctx context.Context, in *dynamodb.CreateTableInput) error {
	if in.StreamSpecification == nil {
		return nil
	}
	desc, err := p.ddb.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: in.TableName})
	if err != nil {
		return fmt.Errorf("describe table %s: %w", *in.TableName, err)
	}
	if ss := desc.Table.StreamSpecification; ss != nil && aws.ToBool(ss.StreamEnabled) {
		if ss.StreamViewType != in.StreamSpecification.StreamViewType {
			p.logf("table %s: its stream shows %s, the template asks for %s: kept as it is", *in.TableName, ss.StreamViewType, in.StreamSpecification.StreamViewType)
		}
		return nil
	}
	if _, err := p.ddb.UpdateTable(ctx, &dynamodb.UpdateTableInput{TableName: in.TableName, StreamSpecification: in.StreamSpecification}); err != nil {
		return fmt.Errorf("enable the stream of %s: %w", *in.TableName, err)
	}
	p.logf("table %s: stream enabled (%s)", *in.TableName, in.StreamSpecification.StreamViewType)
	return nil
}

func isTrue(v any) bool {
	return scalarString(v) == "true"
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
