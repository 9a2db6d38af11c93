package stream_test

import (
	"context"
	"reflect"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/idemkit/kit/idem"
	"github.com/idemkit/kit/idem/idemtest"
	"github.com/idemkit/kit/idem/stream"
)

// TestHandlersAreNamed: the handlers DynamoDB, Kinesis and Claimed return
// have names a wrapper can take and return, and stay assignable to and
// from their signatures.
func TestHandlersAreNamed(t *testing.T) {
	env := idemtest.NewEnv(t)
	claimed, err := stream.Claimed(env.Store(t), func(context.Context, events.DynamoDBEventRecord) (idem.Effect, error) { return idem.Effect{}, nil })
	if err != nil {
		t.Fatal(err)
	}
	var bareRecord func(context.Context, events.DynamoDBEventRecord) error = claimed
	ddb, err := stream.DynamoDB(bareRecord)
	if err != nil {
		t.Fatal(err)
	}
	kin, err := stream.Kinesis(func(context.Context, events.KinesisEventRecord) error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name      string
		got, want reflect.Type
	}{
		{"Claimed", reflect.TypeOf(claimed), reflect.TypeFor[stream.DynamoDBRecordHandler]()},
		{"DynamoDB", reflect.TypeOf(ddb), reflect.TypeFor[stream.DynamoDBHandler]()},
		{"Kinesis", reflect.TypeOf(kin), reflect.TypeFor[stream.KinesisHandler]()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.got != tc.want {
				t.Errorf("%s returns %v; want %v", tc.name, tc.got, tc.want)
			}
		})
	}
	var bare func(context.Context, events.DynamoDBEvent) (events.DynamoDBEventResponse, error) = ddb
	ddb = bare
	_ = ddb
}
