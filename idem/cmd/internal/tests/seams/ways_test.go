package seams_test

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/aws/aws-lambda-go/events"

	"github.com/idemkit/kit/idem"
	"github.com/idemkit/kit/idem/idemtest"
	"github.com/idemkit/kit/idem/kafkaconsumer"
	"github.com/idemkit/kit/idem/sqsconsumer"
	"github.com/idemkit/kit/idem/stream"
	"github.com/idemkit/kit/idem/webhook"
)

// msg is one message as a cell sends it: its id, its sender (a Source, a
// queue, a table, a route: whatever the way scopes keys by) and its
// payload, a JSON object, as a webhook body must be.
type msg struct{ id, source, payload string }

// handler is a cell's effect, as each way's handler returns it: Response
// empty, Effect.Rejected set (when the cell records rejections) to a
// function whose bytes the way replaces with its own answer's.
type handler func(ctx context.Context) (idem.Effect, error)

// panics names the callbacks, other than the handler and
// Effect.Rejected, that panic in a delivery.
type panics struct{ key, fingerprint, verifier, replay bool }

// way is one way a message enters the kit: deliver sends one delivery of
// m through it, built on s, and returns what the sender was told (nil for
// success).
type way struct {
	name    string
	deliver func(ctx context.Context, s *idem.Store, m msg, h handler, p panics) error
}

func boom[T any]() (T, error) { panic("boom") }

// raw is h for the ways whose handlers return an idem.Effect, with the
// answer's bytes stored as its Response.
func raw(ctx context.Context, h handler) (idem.Effect, error) {
	eff, err := h(ctx)
	eff.Response = []byte(`"ok"`)
	if rej := eff.Rejected; rej != nil {
		eff.Rejected = func(r *idem.RejectedError) ([]byte, error) {
			if _, err := rej(r); err != nil {
				return nil, err
			}
			return []byte(`"rejected"`), nil
		}
	}
	return eff, err
}

var ways = []way{
	{"Process", func(ctx context.Context, s *idem.Store, m msg, h handler, p panics) error {
		_, err := s.Process(ctx, message(m, p), func(ctx context.Context, _ idem.Message) (idem.Effect, error) { return raw(ctx, h) })
		return err
	}},
	{"ProcessLeased", func(ctx context.Context, s *idem.Store, m msg, h handler, p panics) error {
		_, err := s.ProcessLeased(ctx, message(m, p), func(ctx context.Context, _ idem.Message) (idem.Effect, error) { return raw(ctx, h) })
		return err
	}},
	{"sqsconsumer", sqsWay(false)},
	{"sqsconsumer batch", sqsWay(true)},
	{"kafkaconsumer", kafkaWay(false)},
	{"kafkaconsumer batch", kafkaWay(true)},
	{"Wrap", func(ctx context.Context, s *idem.Store, m msg, h handler, p panics) error {
		type event struct {
			ID   string          `json:"id"`
			Body json.RawMessage `json:"body"`
		}
		key := func(e event) (string, error) { return e.ID, nil }
		if p.key {
			key = func(event) (string, error) { return boom[string]() }
		}
		handle, err := idem.Wrap(s, key, func(ctx context.Context, _ event) (string, idem.Effect, error) {
			eff, err := h(ctx)
			if rej := eff.Rejected; rej != nil {
				eff.Rejected = func(r *idem.RejectedError) ([]byte, error) {
					if _, err := rej(r); err != nil {
						return nil, err
					}
					return []byte(`"rejected"`), nil
				}
			}
			return "ok", eff, err
		}, func(o *idem.WrapOptions[event]) {
			o.Source = m.source
			if p.fingerprint {
				o.Fingerprint = func(event) (string, error) { return boom[string]() }
			}
		})
		if err != nil {
			return err
		}
		_, err = handle(ctx, event{ID: m.id, Body: json.RawMessage(m.payload)})
		return err
	}},
	{"stream.Claimed", func(ctx context.Context, s *idem.Store, m msg, h handler, p panics) error {
		handle, err := stream.Claimed(s, func(ctx context.Context, _ events.DynamoDBEventRecord) (idem.Effect, error) { return raw(ctx, h) })
		if err != nil {
			return err
		}
		// The payload of a stream record's claim is its sequence number.
		return handle(ctx, events.DynamoDBEventRecord{EventID: m.id, EventSourceArn: "arn:aws:dynamodb:us-east-1:123456789012:table/" + m.source + "/stream/2026-12-02T00:00:00.000",
			Change: events.DynamoDBStreamRecord{SequenceNumber: m.payload}})
	}},
	{"webhook Receiver", webhookWay(false)},
	{"webhook Mux", webhookWay(true)},
}

// message is m as Process takes it.
func message(m msg, p panics) idem.Message {
	msg := idem.Message{ID: m.id, Source: m.source, Payload: []byte(m.payload)}
	if p.replay {
		msg.Replay = func(idem.Record) error { panic("boom") }
	}
	return msg
}

func sqsWay(batch bool) func(context.Context, *idem.Store, msg, handler, panics) error {
	return func(ctx context.Context, s *idem.Store, m msg, h handler, p panics) error {
		handle, err := sqsconsumer.New(s, func(ctx context.Context, _ events.SQSMessage) (idem.Effect, error) { return raw(ctx, h) },
			func(o *sqsconsumer.Options) {
				o.BatchTransactions = batch
				if p.key {
					o.Key = func(events.SQSMessage) (string, error) { return boom[string]() }
				}
			})
		if err != nil {
			return err
		}
		id := m.id
		rec := events.SQSMessage{MessageId: "sqs-" + m.id, Body: m.payload, EventSource: "aws:sqs",
			EventSourceARN:    "arn:aws:sqs:us-east-1:123456789012:" + m.source, // the queue's name is the Source
			MessageAttributes: map[string]events.SQSMessageAttribute{sqsconsumer.KeyAttribute: {DataType: "String", StringValue: &id}}}
		resp, err := handle(ctx, events.SQSEvent{Records: []events.SQSMessage{rec}})
		if err == nil && len(resp.BatchItemFailures) > 0 {
			err = fmt.Errorf("batchItemFailures %v", resp.BatchItemFailures)
		}
		return err
	}
}

// kafkaWay is a Kafka batch of one record of the topic m.source (the
// Source by default), under the idempotency-key header m.id.
func kafkaWay(batch bool) func(context.Context, *idem.Store, msg, handler, panics) error {
	return func(ctx context.Context, s *idem.Store, m msg, h handler, p panics) error {
		handle, err := kafkaconsumer.New(s, func(ctx context.Context, _ events.KafkaRecord) (idem.Effect, error) { return raw(ctx, h) },
			func(o *kafkaconsumer.Options) {
				o.BatchTransactions = batch
				if p.key {
					o.Key = func(events.KafkaRecord) (string, error) { return boom[string]() }
				}
			})
		if err != nil {
			return err
		}
		rec := idemtest.KafkaRecord(m.source, 0, 42, m.payload, map[string]string{kafkaconsumer.KeyHeader: m.id})
		resp, err := handle(ctx, idemtest.KafkaEvent(rec))
		if err == nil && len(resp.BatchItemFailures) > 0 {
			err = fmt.Errorf("batchItemFailures %v", resp.BatchItemFailures)
		}
		return err
	}
}

// webhookWay is a Receiver served alone under m.source as its Source, or
// at its default Source by a Mux, under the route "POST /" + m.source.
func webhookWay(mux bool) func(context.Context, *idem.Store, msg, handler, panics) error {
	return func(ctx context.Context, s *idem.Store, m msg, h handler, p panics) error {
		r, err := webhook.New(s, func(ctx context.Context, _ webhook.Request) (webhook.Response, idem.Effect, error) {
			eff, err := h(ctx)
			if rej := eff.Rejected; rej != nil {
				eff.Rejected = webhook.Reject(func(r *idem.RejectedError) webhook.Response {
					rej(r)
					return webhook.Response{Status: 402, Body: []byte(`"rejected"`)}
				})
			}
			return webhook.Response{Body: []byte(`"ok"`)}, eff, err
		}, func(o *webhook.Options) {
			if !mux {
				o.Source = m.source
			}
			if p.key {
				o.Key = func(webhook.Header, []byte) (string, error) { return boom[string]() }
			}
			if p.fingerprint {
				o.Fingerprint = func(webhook.Request) (string, error) { return boom[string]() }
			}
			if p.verifier {
				o.Verifier = panicky{}
			}
		})
		if err != nil {
			return err
		}
		e := events.APIGatewayV2HTTPRequest{Version: "2.0", RouteKey: "POST /" + m.source, RawPath: "/" + m.source,
			Headers: map[string]string{"idempotency-key": m.id}, Body: m.payload}
		e.RequestContext.HTTP.Method = "POST"
		var resp events.APIGatewayV2HTTPResponse
		if mux {
			resp, err = webhook.Mux{"POST /" + m.source: r}.HandleV2(ctx, e)
		} else {
			resp, err = r.HandleV2(ctx, e)
		}
		if err == nil && resp.StatusCode >= 300 && resp.StatusCode != 402 { // 402: the recorded rejection's answer
			err = fmt.Errorf("%d %s", resp.StatusCode, resp.Body)
		}
		return err
	}
}

type panicky struct{}

func (panicky) Verify(webhook.Header, []byte) error { panic("boom") }
