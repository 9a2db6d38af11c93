package localstack

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"gopkg.in/yaml.v3"

	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/idemkit/kit/idem/idemtest"
)

// streamTable creates a table with a NEW_AND_OLD_IMAGES stream on the
// local DynamoDB and returns it and a function that puts an item.
func streamTable(t *testing.T) (*Table, func(pk, kind string)) {
	t.Helper()
	ctx := context.Background()
	client := idemtest.Client(idemtest.Endpoint(t))
	name := fmt.Sprintf("stream-%d", time.Now().UnixNano())
	out, err := client.CreateTable(ctx, &dynamodb.CreateTableInput{
		TableName:            aws.String(name),
		AttributeDefinitions: []ddbtypes.AttributeDefinition{{AttributeName: aws.String("pk"), AttributeType: ddbtypes.ScalarAttributeTypeS}},
		KeySchema:            []ddbtypes.KeySchemaElement{{AttributeName: aws.String("pk"), KeyType: ddbtypes.KeyTypeHash}},
		BillingMode:          ddbtypes.BillingModePayPerRequest,
		StreamSpecification:  &ddbtypes.StreamSpecification{StreamEnabled: aws.Bool(true), StreamViewType: ddbtypes.StreamViewTypeNewAndOldImages},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = client.DeleteTable(context.Background(), &dynamodb.DeleteTableInput{TableName: aws.String(name)})
	})
	put := func(pk, kind string) {
		t.Helper()
		_, err := client.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(name), Item: map[string]ddbtypes.AttributeValue{
			"pk": &ddbtypes.AttributeValueMemberS{Value: pk}, "kind": &ddbtypes.AttributeValueMemberS{Value: kind}}})
		if err != nil {
			t.Fatal(err)
		}
	}
	return &Table{Name: name, ARN: aws.ToString(out.TableDescription.TableArn), StreamARN: aws.ToString(out.TableDescription.LatestStreamArn)}, put
}

// streamRecorder is a fake function: it records the batches it gets (the
// pk of each record) and answers each with answer.
type streamRecorder struct {
	mu      sync.Mutex
	batches [][]string
	answer  func(ev events.DynamoDBEvent) ([]byte, error)
}

func (r *streamRecorder) Invoke(_ context.Context, _ string, payload []byte) ([]byte, error) {
	var ev events.DynamoDBEvent
	if err := json.Unmarshal(payload, &ev); err != nil {
		return nil, err
	}
	var pks []string
	for _, rec := range ev.Records {
		pks = append(pks, rec.Change.Keys["pk"].String())
	}
	r.mu.Lock()
	r.batches = append(r.batches, pks)
	r.mu.Unlock()
	if r.answer == nil {
		return nil, nil
	}
	return r.answer(ev)
}

func (r *streamRecorder) got() [][]string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.batches)
}

func (r *streamRecorder) delivered() int {
	n := 0
	for _, b := range r.got() {
		n += len(b)
	}
	return n
}

func runStreamPoller(t *testing.T, p *StreamPoller) {
	t.Helper()
	p.Endpoint, p.Region, p.Logf = idemtest.Endpoint(t), "us-east-1", t.Logf
	p.Source.Function, p.Source.StreamARN = "Fn", p.Table.StreamARN
	p.PollInterval, p.RetryDelay = 20*time.Millisecond, 10*time.Millisecond
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { p.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
}

// Records arrive in the order they were written, in batches of at most
// BatchSize, with Lambda's fields; those no filter matches are
// checkpointed and never delivered.
func TestStreamPollerOrderAndFilter(t *testing.T) {
	table, put := streamTable(t)
	filter, err := ParseFilter(`{"eventName":["INSERT","MODIFY"],"dynamodb":{"NewImage":{"kind":{"S":["outbox"]}}}}`)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var first events.DynamoDBEventRecord
	fn := &streamRecorder{answer: func(ev events.DynamoDBEvent) ([]byte, error) {
		mu.Lock()
		if first.EventID == "" {
			first = ev.Records[0]
		}
		mu.Unlock()
		return nil, nil
	}}
	var want []string
	for i := range 7 {
		put(fmt.Sprintf("o%d", i), "outbox")
		put(fmt.Sprintf("c%d", i), "claim")
		want = append(want, fmt.Sprintf("o%d", i))
	}
	p := &StreamPoller{Source: StreamEventSource{StartingPosition: "TRIM_HORIZON", BatchSize: 3, MaximumRetryAttempts: -1, Filters: []*Filter{filter}},
		Table: table, Invoker: fn}
	runStreamPoller(t, p)
	waitFor(t, "7 records delivered", 10*time.Second, func() bool { return fn.delivered() >= 7 })
	put("o7", "outbox") // read as it comes
	want = append(want, "o7")
	waitFor(t, "the eighth", 10*time.Second, func() bool { return fn.delivered() >= 8 })
	var got []string
	for _, b := range fn.got() {
		if len(b) > 3 {
			t.Errorf("expect batches of at most 3, got %v", b)
		}
		got = append(got, b...)
	}
	if !slices.Equal(got, want) {
		t.Fatalf("expect %v in order, got %v", want, got)
	}
	if st := p.Stats(); st.Filtered != 7 || st.Records != 8 || st.Retries != 0 {
		t.Errorf("expect 7 filtered, 8 delivered, no retry, got %+v", st)
	}
	if first.EventSourceArn != table.StreamARN || first.EventName != "INSERT" || first.EventSource != "aws:dynamodb" ||
		first.Change.SequenceNumber == "" || first.Change.NewImage["kind"].String() != "outbox" {
		t.Errorf("record: expect Lambda's fields, got %+v", first)
	}
}

// A partial batch response checkpoints before the lowest record reported:
// the batch is retried from it, and the records before it are not
// delivered again.
func TestStreamPollerBatchItemFailures(t *testing.T) {
	table, put := streamTable(t)
	var failedOnce sync.Once
	fn := &streamRecorder{answer: func(ev events.DynamoDBEvent) ([]byte, error) {
		var resp events.DynamoDBEventResponse
		for _, r := range ev.Records {
			pk := r.Change.Keys["pk"].String()
			if pk == "r4" || pk == "r2" {
				failedOnce.Do(func() {
					// r4 then r2: the lowest is what counts.
					resp.BatchItemFailures = []events.DynamoDBBatchItemFailure{
						{ItemIdentifier: ev.Records[4].Change.SequenceNumber}, {ItemIdentifier: ev.Records[2].Change.SequenceNumber}}
				})
			}
		}
		return json.Marshal(resp)
	}}
	for i := range 5 {
		put(fmt.Sprintf("r%d", i), "outbox")
	}
	p := &StreamPoller{Source: StreamEventSource{StartingPosition: "TRIM_HORIZON", BatchSize: 10, MaximumRetryAttempts: 3, ReportBatchItemFailures: true},
		Table: table, Invoker: fn}
	runStreamPoller(t, p)
	waitFor(t, "the retry", 10*time.Second, func() bool { return len(fn.got()) >= 2 })
	time.Sleep(200 * time.Millisecond) // nothing more comes
	want := [][]string{{"r0", "r1", "r2", "r3", "r4"}, {"r2", "r3", "r4"}}
	if got := fn.got(); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("expect %v, got %v", want, got)
	}
	if st := p.Stats(); st.Invokes != 2 || st.Retries != 1 || st.OnFailure != 0 {
		t.Errorf("expect 2 invokes, 1 retry, got %+v", st)
	}
}

// A function error retries the whole batch, halved when
// BisectBatchOnFunctionError is on; after MaximumRetryAttempts the records
// still failing go to the on-failure queue as a record of where they are,
// and the poller moves on.
func TestStreamPollerFunctionErrors(t *testing.T) {
	for _, tc := range []struct {
		name      string
		bisect    bool
		want      string   // the batches, in order
		onFailure []string // its first and last records
		size      int
	}{
		{"retry then on-failure", false, "[[g0 g1 bad g2] [g0 g1 bad g2] [g3]]", []string{"g0", "g2"}, 4},
		{"bisect", true, "[[g0 g1 bad g2] [g0 g1] [bad g2] [bad] [bad] [g2] [g3]]", []string{"bad", "bad"}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			table, put := streamTable(t)
			client := newSQS(testSQS(t), "us-east-1")
			_, dlq := testQueues(t, client, 1)
			seqs := map[string]string{} // sequence number → pk
			var mu sync.Mutex
			fn := &streamRecorder{answer: func(ev events.DynamoDBEvent) ([]byte, error) {
				mu.Lock()
				defer mu.Unlock()
				for _, r := range ev.Records {
					seqs[r.Change.SequenceNumber] = r.Change.Keys["pk"].String()
				}
				for _, r := range ev.Records {
					if r.Change.Keys["pk"].String() == "bad" {
						return nil, &FunctionError{Type: "errorString", Message: "boom"}
					}
				}
				return nil, nil
			}}
			for _, pk := range []string{"g0", "g1", "bad", "g2"} {
				put(pk, "outbox")
			}
			p := &StreamPoller{Source: StreamEventSource{StartingPosition: "TRIM_HORIZON", BatchSize: 4, MaximumRetryAttempts: 1,
				BisectBatchOnFunctionError: tc.bisect}, Table: table, Invoker: fn, SQS: client, OnFailure: dlq, FunctionARN: "arn:aws:lambda:us-east-1:123456789012:function:Fn"}
			runStreamPoller(t, p)
			waitFor(t, "the on-failure record", 10*time.Second, func() bool { return p.Stats().OnFailure > 0 })
			put("g3", "outbox") // the poller moved on
			waitFor(t, "g3", 10*time.Second, func() bool { return strings.Contains(fmt.Sprint(fn.got()), "g3") })
			if got := fmt.Sprint(fn.got()); got != tc.want {
				t.Fatalf("expect batches %s, got %s", tc.want, got)
			}
			out, err := client.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{QueueUrl: aws.String(dlq.URL), MaxNumberOfMessages: 10})
			if err != nil || len(out.Messages) != 1 {
				t.Fatalf("expect one on-failure record, got %+v, %v", out, err)
			}
			var doc struct {
				RequestContext struct {
					FunctionArn, Condition string
					ApproximateInvokeCount int
				}
				ResponseContext    struct{ FunctionError string }
				DDBStreamBatchInfo struct {
					ShardID                                                         string `json:"shardId"`
					StartSequenceNumber, EndSequenceNumber, StreamArn               string
					BatchSize                                                       int
					ApproximateArrivalOfFirstRecord, ApproximateArrivalOfLastRecord string
				}
			}
			if err := json.Unmarshal([]byte(aws.ToString(out.Messages[0].Body)), &doc); err != nil {
				t.Fatal(err)
			}
			info := doc.DDBStreamBatchInfo
			mu.Lock()
			first, last := seqs[info.StartSequenceNumber], seqs[info.EndSequenceNumber]
			mu.Unlock()
			if first != tc.onFailure[0] || last != tc.onFailure[1] || info.StreamArn != table.StreamARN || info.ShardID == "" ||
				info.ApproximateArrivalOfFirstRecord == "" || doc.RequestContext.Condition != "RetryAttemptsExhausted" ||
				doc.RequestContext.ApproximateInvokeCount != 2 || doc.ResponseContext.FunctionError != "Unhandled" ||
				doc.RequestContext.FunctionArn != p.FunctionARN {
				t.Errorf("on-failure record: expect %v after 2 invokes, got %s…%s in %s", tc.onFailure, first, last, aws.ToString(out.Messages[0].Body))
			}
			if info.BatchSize != tc.size {
				t.Errorf("on-failure batch size: expect %d, got %d", tc.size, info.BatchSize)
			}
		})
	}
}

// A DynamoDB event of a template becomes a StreamEventSource with Lambda's
// defaults, its stream the table's, and a poller that sends on-failure
// records to the queue the template names.
func TestStreamEventSourceFromTemplate(t *testing.T) {
	tmpl, err := ParseTemplate([]byte(`
Resources:
  Outbox:
    Type: AWS::DynamoDB::Table
    Properties:
      BillingMode: PAY_PER_REQUEST
      AttributeDefinitions: [{AttributeName: pk, AttributeType: S}]
      KeySchema: [{AttributeName: pk, KeyType: HASH}]
      StreamSpecification: {StreamViewType: NEW_IMAGE}
  Failed:
    Type: AWS::SQS::Queue
  Relay:
    Type: AWS::Serverless::Function
    Properties:
      Runtime: provided.al2023
      Handler: bootstrap
      Events:
        Changes:
          Type: DynamoDB
          Properties:
            Stream: !GetAtt Outbox.StreamArn
            StartingPosition: TRIM_HORIZON
            BatchSize: 25
            MaximumBatchingWindowInSeconds: 1
            FunctionResponseTypes: [ReportBatchItemFailures]
            BisectBatchOnFunctionError: true
            MaximumRetryAttempts: 4
            MaximumRecordAgeInSeconds: 3600
            FilterCriteria:
              Filters:
                - Pattern: '{"eventName":["INSERT","MODIFY"],"dynamodb":{"NewImage":{"kind":{"S":["outbox"]}}}}'
            DestinationConfig:
              OnFailure:
                Destination: !GetAtt Failed.Arn
        Defaults:
          Type: DynamoDB
          Properties:
            Stream: !GetAtt Outbox.StreamArn
            StartingPosition: LATEST
            Enabled: false
`))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	ddb := idemtest.Client(idemtest.Endpoint(t))
	sq := newSQS(testSQS(t), "us-east-1")
	res, err := CreateResources(ctx, tmpl, ResourceConfig{DynamoDB: ddb, SQS: sq, StackName: fmt.Sprintf("streams-%d", time.Now().UnixNano()), Region: "us-east-1", Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = ddb.DeleteTable(context.Background(), &dynamodb.DeleteTableInput{TableName: aws.String(res.Tables["Outbox"].Name)})
		_, _ = sq.DeleteQueue(context.Background(), &sqs.DeleteQueueInput{QueueUrl: aws.String(res.Queues["Failed"].URL)})
	})
	table := res.Tables["Outbox"]
	if table.StreamARN == "" || table.StreamViewType != "NEW_IMAGE" {
		t.Fatalf("expect the table's stream, NEW_IMAGE, got %q %q", table.StreamARN, table.StreamViewType)
	}
	s := &Stack{Template: tmpl, Options: Options{Region: "us-east-1", Log: io.Discard}, resources: res, Tables: res.Tables, Queues: res.Queues, sqs: sq}
	spec, err := s.functionSpec("Relay")
	if err != nil {
		t.Fatal(err)
	}
	if len(spec.Streams) != 2 || len(spec.Ignored) != 0 {
		t.Fatalf("expect two stream sources, none ignored, got %+v", spec)
	}
	got, def := spec.Streams[0], spec.Streams[1]
	if got.Event != "Changes" || got.StreamARN != table.StreamARN || got.StartingPosition != "TRIM_HORIZON" || got.BatchSize != 25 ||
		got.BatchingWindow != time.Second || !got.ReportBatchItemFailures || !got.BisectBatchOnFunctionError ||
		got.MaximumRetryAttempts != 4 || got.MaximumRecordAge != time.Hour || len(got.Filters) != 1 ||
		got.OnFailure != res.Queues["Failed"].ARN || !got.Enabled {
		t.Errorf("Changes: got %+v", got)
	}
	if def.BatchSize != 100 || def.MaximumRetryAttempts != -1 || def.MaximumRecordAge != 0 || def.StartingPosition != "LATEST" ||
		def.Enabled || def.ReportBatchItemFailures || def.BisectBatchOnFunctionError || len(def.Filters) != 0 || def.OnFailure != "" {
		t.Errorf("Defaults: expect Lambda's defaults, got %+v", def)
	}
	p, err := s.streamPoller(got)
	if err != nil || p.Table != table || p.OnFailure != res.Queues["Failed"] || !strings.Contains(p.FunctionARN, ":function:") {
		t.Errorf("poller: got %+v, %v", p, err)
	}
	if p, err := s.streamPoller(def); p != nil || err != nil {
		t.Errorf("a disabled event: expect no poller, got %+v, %v", p, err)
	}
	bad := got
	bad.StreamARN = "arn:aws:dynamodb:us-east-1:123456789012:table/other/stream/x"
	if _, err := s.streamPoller(bad); err == nil {
		t.Errorf("a stream not the template's: expect an error")
	}

	for _, tc := range []struct{ name, props, err string }{
		{"no starting position", `{Stream: x}`, "StartingPosition"},
		{"batch size", `{Stream: x, StartingPosition: LATEST, BatchSize: 0}`, "BatchSize"},
		{"retries", `{Stream: x, StartingPosition: LATEST, MaximumRetryAttempts: -2}`, "MaximumRetryAttempts"},
		{"record age", `{Stream: x, StartingPosition: LATEST, MaximumRecordAgeInSeconds: 10}`, "MaximumRecordAgeInSeconds"},
		{"filter", `{Stream: x, StartingPosition: LATEST, FilterCriteria: {Filters: [{Pattern: '{"a":"b"}'}]}}`, "filter pattern"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var n yaml.Node
			if err := yaml.Unmarshal([]byte(tc.props), &n); err != nil {
				t.Fatal(err)
			}
			props, err := plain(&n)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := streamEventSource("Fn", "E", mapOf(props)); err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Fatalf("expect an error saying %q, got %v", tc.err, err)
			}
		})
	}
}
