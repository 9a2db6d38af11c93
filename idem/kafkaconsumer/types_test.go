package kafkaconsumer_test

import (
	"context"
	"reflect"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/idemkit/kit/idem"
	"github.com/idemkit/kit/idem/kafkaconsumer"
)

// TestNewReturnsABatchHandler: New's handler has a name a wrapper can
// take and return, and stays assignable to and from its signature.
func TestNewReturnsABatchHandler(t *testing.T) {
	h, err := kafkaconsumer.New(newEnv(t).store, func(context.Context, events.KafkaRecord) (idem.Effect, error) { return idem.Effect{}, nil })
	if err != nil {
		t.Fatal(err)
	}
	if got, want := reflect.TypeOf(h), reflect.TypeFor[kafkaconsumer.BatchHandler](); got != want {
		t.Errorf("New returns %v; want %v", got, want)
	}
	var bare func(context.Context, events.KafkaEvent) (kafkaconsumer.Response, error) = h
	h = bare
	_ = h
}
