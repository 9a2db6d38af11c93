package main

import (
	"context"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/idemkit/kit/idem/outbox"
)

// The relay's concurrent sends (issue 18, item 4): one stream batch sent
// to an SQS stand-in with a fixed round trip, one call at a time beside
// the default, counted in messages per round trip. A fixed round trip
// makes the count exact; the local SQS's time per call is moto's, not
// SQS's.

// relayParRun is one mode's figures: the median of relayParRounds runs.
type relayParRun struct {
	name     string
	messages int
	calls    int // SendMessageBatch calls per run
	wall     time.Duration
}

// perRoundTrip is messages / (wall time / round trip): about 10 one call
// at a time, up to the batch's size when every call overlaps.
func (r relayParRun) perRoundTrip(rtt time.Duration) float64 {
	return float64(r.messages) / (r.wall.Seconds() / rtt.Seconds())
}

const relayParRounds = 5

// runRelayPar sends recs, a stream batch of outbox items, to a stand-in
// answering after rtt, with Concurrency 1 and with the default.
func runRelayPar(ctx context.Context, recs []events.DynamoDBEventRecord, rtt time.Duration) ([]relayParRun, error) {
	var out []relayParRun
	for _, mode := range []struct {
		name        string
		concurrency int
	}{{"one call at a time (`Concurrency: 1`)", 1}, {"concurrent (the default)", 0}} {
		var calls atomic.Int64
		relay, err := outbox.New(func(o *outbox.Options) {
			o.SQS, o.Concurrency, o.Logger = slowSQS{rtt, &calls}, mode.concurrency, slog.New(slog.DiscardHandler)
		})
		if err != nil {
			return nil, err
		}
		var walls []time.Duration
		for range relayParRounds {
			calls.Store(0)
			start := time.Now()
			resp, err := relay.Handle(ctx, events.DynamoDBEvent{Records: recs})
			if err != nil || len(resp.BatchItemFailures) > 0 {
				return nil, fmt.Errorf("outbox: the relay failed against the stand-in: %v %v", err, resp.BatchItemFailures)
			}
			walls = append(walls, time.Since(start))
		}
		out = append(out, relayParRun{name: mode.name, messages: len(recs), calls: int(calls.Load()), wall: percentile(walls, 0.5)})
	}
	return out, nil
}

// slowSQS takes every message after a fixed round trip, as SQS would with
// its network and service time and no server of ours in the way.
type slowSQS struct {
	rtt   time.Duration
	calls *atomic.Int64
}

func (s slowSQS) SendMessageBatch(ctx context.Context, in *sqs.SendMessageBatchInput, _ ...func(*sqs.Options)) (*sqs.SendMessageBatchOutput, error) {
	s.calls.Add(1)
	t := time.NewTimer(s.rtt)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return instantSQS{}.SendMessageBatch(ctx, in)
}
