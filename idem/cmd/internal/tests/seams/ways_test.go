package seams_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambdaurl"

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
// success). kind names a family of ways ("webhook": one Receiver's
// entries); byRoute, that the way scopes keys by the route "POST /" +
// m.source, as a Mux does.
type way struct {
	name    string
	kind    string
	byRoute bool
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
	{name: "Process", deliver: func(ctx context.Context, s *idem.Store, m msg, h handler, p panics) error {
		_, err := s.Process(ctx, message(m, p), func(ctx context.Context, _ idem.Message) (idem.Effect, error) { return raw(ctx, h) })
		return err
	}},
	{name: "ProcessLeased", deliver: func(ctx context.Context, s *idem.Store, m msg, h handler, p panics) error {
		_, err := s.ProcessLeased(ctx, message(m, p), func(ctx context.Context, _ idem.Message) (idem.Effect, error) { return raw(ctx, h) })
		return err
	}},
	{name: "sqsconsumer", deliver: sqsWay(false)},
	{name: "sqsconsumer batch", deliver: sqsWay(true)},
	{name: "kafkaconsumer", deliver: kafkaWay(false)},
	{name: "kafkaconsumer batch", deliver: kafkaWay(true)},
	{name: "Wrap", deliver: func(ctx context.Context, s *idem.Store, m msg, h handler, p panics) error {
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
	{name: "stream.Claimed", deliver: func(ctx context.Context, s *idem.Store, m msg, h handler, p panics) error {
		handle, err := stream.Claimed(s, func(ctx context.Context, _ events.DynamoDBEventRecord) (idem.Effect, error) { return raw(ctx, h) })
		if err != nil {
			return err
		}
		// The payload of a stream record's claim is its sequence number.
		return handle(ctx, events.DynamoDBEventRecord{EventID: m.id, EventSourceArn: "arn:aws:dynamodb:us-east-1:123456789012:table/" + m.source + "/stream/2026-12-02T00:00:00.000",
			Change: events.DynamoDBStreamRecord{SequenceNumber: m.payload}})
	}},
	// A webhook through each of its entries: the Receiver's own Source or,
	// served by a Mux, the route.
	webhookVia("webhook Receiver", false, viaHTTPAPI),
	webhookVia("webhook Mux", true, viaHTTPAPI),
	webhookVia("webhook REST Mux.Handle", true, viaRESTAPI),
	webhookVia("webhook net/http Receiver", false, viaNetHTTP),
	webhookVia("webhook net/http Mux", true, viaNetHTTP),
	webhookVia("webhook lambdaurl Mux", true, viaLambdaURL),
	webhookVia("webhook ALB Receiver", false, viaALB(false)),
	webhookVia("webhook ALB multi-value Mux", true, viaALB(true)),
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

// kafkaWay is a Kafka batch of one record of the topic m.source (with
// the cluster's tag, the Source by default), under the idempotency-key
// header m.id.
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

// webhookVia is the way named name: a webhook Receiver reached through
// one of its entries, alone or by a Mux (byRoute).
func webhookVia(name string, byRoute bool, send sender) way {
	return way{name: name, kind: "webhook", byRoute: byRoute, deliver: webhookWay(byRoute, send)}
}

// webhookWay is a Receiver reached through one of its entries (send),
// served alone under m.source as its Source, or at its default Source by
// a Mux (byRoute), under the route "POST /" + m.source. The sender is told
// nil for a 2xx and for 402, the recorded rejection's answer, else the
// *answer.
func webhookWay(byRoute bool, send sender) func(context.Context, *idem.Store, msg, handler, panics) error {
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
			if !byRoute {
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
			if fn, ok := ctx.Value(webhookOptionsKey{}).(func(*webhook.Options)); ok {
				fn(o)
			}
		})
		if err != nil {
			return err
		}
		target := receiver{r: r}
		if byRoute {
			target.mux = webhook.Mux{"POST /" + m.source: r}
		}
		a, err := send(ctx, target, m)
		if err == nil && a.status >= 300 && a.status != 402 {
			return a
		}
		return err
	}
}

// webhookOptionsKey carries, on a delivery's context, a function that
// sets more of the webhook ways' Options (a test's InFlightWait).
type webhookOptionsKey struct{}

// receiver is what a webhook way's sender serves: the Receiver, or the
// Mux around it.
type receiver struct {
	r   *webhook.Receiver
	mux webhook.Mux // nil: the Receiver alone
}

func (rc receiver) handler() http.Handler {
	if rc.mux != nil {
		return rc.mux
	}
	return rc.r
}

func (rc receiver) handleALB(ctx context.Context, e events.ALBTargetGroupRequest) (events.ALBTargetGroupResponse, error) {
	if rc.mux != nil {
		return rc.mux.HandleALB(ctx, e)
	}
	return rc.r.HandleALB(ctx, e)
}

// answer is what a webhook's sender was told.
type answer struct {
	status int
	header map[string]string
	body   string
}

func (a *answer) Error() string { return fmt.Sprintf("%d %s", a.status, a.body) }

// A sender delivers m through one entry of rc, as the way's sender sends
// it: the key in Idempotency-Key, the payload as the body.
type sender func(ctx context.Context, rc receiver, m msg) (*answer, error)

// viaHTTPAPI sends an HTTP API event (payload 2.0) to HandleV2.
func viaHTTPAPI(ctx context.Context, rc receiver, m msg) (*answer, error) {
	e := idemtest.HTTPRequest("POST", "/"+m.source, m.payload, map[string]string{"Idempotency-Key": m.id})
	var resp events.APIGatewayV2HTTPResponse
	var err error
	if rc.mux != nil {
		resp, err = rc.mux.HandleV2(ctx, e)
	} else {
		resp, err = rc.r.HandleV2(ctx, e)
	}
	return &answer{resp.StatusCode, resp.Headers, resp.Body}, err
}

// viaRESTAPI sends a REST API proxy event (payload 1.0) to Mux.Handle,
// the one entry of a REST API's events.
func viaRESTAPI(ctx context.Context, rc receiver, m msg) (*answer, error) {
	out, err := rc.mux.Handle(ctx, idemtest.RESTRequest("POST", "/"+m.source, m.payload, map[string]string{"Idempotency-Key": m.id}))
	if err != nil {
		return nil, err
	}
	resp := out.(events.APIGatewayProxyResponse)
	return &answer{resp.StatusCode, resp.Headers, resp.Body}, nil
}

// viaNetHTTP serves an *http.Request through ServeHTTP, recorded by
// httptest.
func viaNetHTTP(ctx context.Context, rc receiver, m msg) (*answer, error) {
	req := httptest.NewRequestWithContext(ctx, "POST", "/"+m.source, strings.NewReader(m.payload))
	req.Header.Set("Idempotency-Key", m.id)
	rec := httptest.NewRecorder()
	rc.handler().ServeHTTP(rec, req)
	resp := rec.Result()
	return &answer{resp.StatusCode, joined(resp.Header), rec.Body.String()}, nil
}

// viaLambdaURL serves a function URL's event as lambdaurl.Start does:
// lambdaurl.Wrap builds the *http.Request and streams the answer back.
func viaLambdaURL(ctx context.Context, rc receiver, m msg) (*answer, error) {
	e := &events.LambdaFunctionURLRequest{Version: "2.0", RawPath: "/" + m.source, Body: m.payload,
		Headers: map[string]string{"idempotency-key": m.id, "content-type": "application/json"}}
	e.RequestContext.HTTP.Method, e.RequestContext.DomainName = "POST", "abcdefg.lambda-url.us-east-1.on.aws"
	resp, err := lambdaurl.Wrap(rc.handler())(ctx, e)
	if err != nil {
		return nil, err
	}
	body, err := io.ReadAll(resp.Body)
	return &answer{resp.StatusCode, resp.Headers, string(body)}, err
}

// viaALB sends an ALB target group's event to HandleALB, its headers one
// value each or, multi, as lists.
func viaALB(multi bool) sender {
	return func(ctx context.Context, rc receiver, m msg) (*answer, error) {
		e := idemtest.ALBRequest("POST", "/"+m.source, m.payload, map[string]string{"Idempotency-Key": m.id, "Content-Type": "application/json"})
		if multi {
			e = idemtest.ALBMultiValue(e)
		}
		resp, err := rc.handleALB(ctx, e)
		if (resp.MultiValueHeaders != nil) != multi || resp.StatusDescription == "" {
			return nil, fmt.Errorf("an ALB answer in the wrong format: %+v", resp)
		}
		h := resp.Headers
		if multi {
			h = joined(resp.MultiValueHeaders)
		}
		return &answer{resp.StatusCode, h, resp.Body}, err
	}
}

// joined is each header's values joined with commas.
func joined(h map[string][]string) map[string]string {
	out := make(map[string]string, len(h))
	for k, vs := range h {
		out[k] = strings.Join(vs, ",")
	}
	return out
}

type panicky struct{}

func (panicky) Verify(webhook.Header, []byte) error { panic("boom") }
