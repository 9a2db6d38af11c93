package outbox_test

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/idemkit/kit/idem"
	"github.com/idemkit/kit/idem/idemtest"
	"github.com/idemkit/kit/idem/outbox"
)

// printedQueue stands in for SQS: it prints what the relay sends, and
// keeps each message's IdempotencyKey, the id the next consumer dedupes on.
type printedQueue struct{ keys *[]string }

func (q printedQueue) SendMessageBatch(_ context.Context, in *sqs.SendMessageBatchInput, _ ...func(*sqs.Options)) (*sqs.SendMessageBatchOutput, error) {
	for _, e := range in.Entries {
		fmt.Printf("send %s %s, Type %s\n", aws.ToString(in.QueueUrl), aws.ToString(e.MessageBody), aws.ToString(e.MessageAttributes["Type"].StringValue))
		*q.keys = append(*q.keys, aws.ToString(e.MessageAttributes["IdempotencyKey"].StringValue))
	}
	out := &sqs.SendMessageBatchOutput{}
	for _, e := range in.Entries {
		out.Successful = append(out.Successful, sqstypes.SendMessageBatchResultEntry{Id: e.Id})
	}
	return out, nil
}

// A credit's effect and the message announcing it, committed in one
// transaction; the relay sends the message from the table's stream, and
// sends it under the same id when the stream hands it over again. In a
// function the relay is the stream's Lambda handler (lambda.Start(relay.Handle))
// and SQS an *sqs.Client.
func ExampleRelay() {
	ctx := context.Background()
	env, err := idemtest.Start(ctx) // a local DynamoDB
	if err != nil {
		fmt.Println(err)
		return
	}
	if _, err := env.Client.UpdateTable(ctx, &dynamodb.UpdateTableInput{TableName: aws.String(env.Processed),
		StreamSpecification: &types.StreamSpecification{StreamEnabled: aws.Bool(true), StreamViewType: types.StreamViewTypeNewImage}}); err != nil {
		fmt.Println(err)
		return
	}
	store, err := idem.New(env.Client, env.Processed, func(o *idem.Options) { o.Logger = slog.New(slog.DiscardHandler) })
	if err != nil {
		fmt.Println(err)
		return
	}
	const ledger = "https://sqs.us-east-1.amazonaws.com/123456789012/ledger"
	credit := func(ctx context.Context, _ idem.Message) (idem.Effect, error) {
		w, err := idem.Update(env.Accounts, map[string]string{"account": "acc-1"}, expression.Add(expression.Name("balance"), expression.Value(500)))
		return idem.Effect{Writes: []types.TransactWriteItem{w},
			Messages: []idem.OutgoingMessage{{Destination: ledger, Type: "credit.applied", Body: `{"account":"acc-1","cents":500}`}}}, err
	}
	for range 2 { // the second delivery is a Duplicate: nothing more to send
		if _, err := store.Process(ctx, idem.Message{ID: "evt-1", Source: "credits", Payload: []byte("500")}, credit); err != nil {
			fmt.Println(err)
			return
		}
	}
	recs, err := idemtest.ReadStream(ctx, env.Client, env.Processed)
	if err != nil {
		fmt.Println(err)
		return
	}
	var keys []string
	relay, err := outbox.New(func(o *outbox.Options) { o.SQS = printedQueue{&keys}; o.Logger = slog.New(slog.DiscardHandler) })
	if err != nil {
		fmt.Println(err)
		return
	}
	for range 2 { // the stream hands a batch over again after a failure
		resp, err := relay.Handle(ctx, idemtest.DynamoDBEvent(recs...))
		fmt.Println("failures:", len(resp.BatchItemFailures), err)
	}
	fmt.Println("sent twice under one IdempotencyKey:", len(keys) == 2 && keys[0] == keys[1] && keys[0] != "")
	// Output:
	// send https://sqs.us-east-1.amazonaws.com/123456789012/ledger {"account":"acc-1","cents":500}, Type credit.applied
	// failures: 0 <nil>
	// send https://sqs.us-east-1.amazonaws.com/123456789012/ledger {"account":"acc-1","cents":500}, Type credit.applied
	// failures: 0 <nil>
	// sent twice under one IdempotencyKey: true
}
