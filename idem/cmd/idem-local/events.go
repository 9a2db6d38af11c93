package main

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"

	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/idemkit/kit/idem/idemtest"
	"github.com/idemkit/kit/idem/sqsconsumer"
)

// message is one message of the demo, delivered several times.
type message struct {
	from string // file, or "built-in"
	// http, or sqs
	kind    string
	method  string
	path    string
	headers map[string]string
	body    []byte
	attrs   map[string]sqstypes.MessageAttributeValue
	// fileKey is what else names an SQS record in its file: its FIFO key
	// (sqsconsumer.DeduplicationKey, as the queue function reads it), else
	// its messageId.
	fileKey string
	// key is the message's idempotency key as the demo reads it, for
	// display and to count each message's effect once.
	key string
	// account and cents are the credit, when the body is one.
	account string
	cents   int64
	// queue is the name in an SQS record's eventSourceARN, such as
	// "idemkit-LedgerQueue".
	queue string
}

// builtIn is what the demo replays when the events directory has nothing
// it can replay.
func builtIn() []message {
	var ms []message
	for _, c := range []struct{ kind, id, account string }{
		{"http", "evt_web_001", "acc-1"}, {"http", "evt_web_002", "acc-2"},
		{"sqs", "evt_q_001", "acc-1"}, {"sqs", "evt_q_002", "acc-3"},
	} {
		body := fmt.Sprintf(`{"id":%q,"account":%q,"cents":%d}`, c.id, c.account, 100*(len(ms)+1))
		m := message{from: "built-in", kind: c.kind, body: []byte(body), headers: map[string]string{}}
		if c.kind == "http" {
			m.method, m.path = "POST", "/webhooks/credits"
			m.headers["content-type"] = "application/json"
			m.headers["idempotency-key"] = c.id
		}
		ms = append(ms, m.withCredit())
	}
	return ms
}

func (m message) withCredit() message {
	var c struct {
		ID      string          `json:"id"`
		Account string          `json:"account"`
		Cents   json.RawMessage `json:"cents"`
		// A Stripe event: the credit is the payment's.
		Type string `json:"type"`
		Data struct {
			Object struct {
				AmountReceived json.RawMessage   `json:"amount_received"`
				Metadata       map[string]string `json:"metadata"`
			} `json:"object"`
		} `json:"data"`
	}
	if json.Unmarshal(m.body, &c) == nil {
		cents, account := c.Cents, c.Account
		if c.Type == "payment_intent.succeeded" {
			cents, account = c.Data.Object.AmountReceived, c.Data.Object.Metadata["account"]
		}
		if n, err := strconv.ParseInt(string(cents), 10, 64); err == nil && account != "" && n > 0 {
			m.account, m.cents = account, n
		}
	}
	switch {
	case m.headers["idempotency-key"] != "":
		m.key = m.headers["idempotency-key"]
	case m.attrs["IdempotencyKey"].StringValue != nil:
		m.key = *m.attrs["IdempotencyKey"].StringValue
	case m.kind == "sqs" && strings.HasPrefix(m.fileKey, "dedup:"):
		m.key = strings.TrimPrefix(m.fileKey, "dedup:")
	case c.ID != "":
		m.key = c.ID
	default:
		m.key = m.fileKey
	}
	// The demo sends each SQS record again as a producer re-sending it:
	// that producer names the message's key, so that the copies are one
	// message (idem/sqsconsumer reads this attribute first).
	if m.kind == "sqs" && m.attrs["IdempotencyKey"].StringValue == nil && m.key != "" {
		if m.attrs == nil {
			m.attrs = map[string]sqstypes.MessageAttributeValue{}
		}
		m.attrs["IdempotencyKey"] = sqstypes.MessageAttributeValue{DataType: aws.String("String"), StringValue: aws.String(m.key)}
	}
	return m
}

// readEvents reads the SQS and API Gateway v2 events in dir.
func readEvents(dir string) ([]message, []string, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		return nil, nil, err
	}
	var ms []message
	var skipped []string
	for _, f := range files {
		if filepath.Base(f) == "env.json" { // sam local's --env-vars file
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, nil, err
		}
		var probe map[string]json.RawMessage
		if json.Unmarshal(b, &probe) != nil {
			skipped = append(skipped, filepath.Base(f)+" (not a JSON object)")
			continue
		}
		switch {
		case probe["Records"] != nil:
			var ev events.SQSEvent
			if err := json.Unmarshal(b, &ev); err != nil {
				skipped = append(skipped, filepath.Base(f)+" ("+err.Error()+")")
				continue
			}
			for _, r := range ev.Records {
				if r.EventSource != "aws:sqs" {
					continue
				}
				m := message{from: filepath.Base(f), kind: "sqs", body: []byte(r.Body), attrs: map[string]sqstypes.MessageAttributeValue{}, fileKey: r.MessageId}
				m.queue = r.EventSourceARN[strings.LastIndexByte(r.EventSourceARN, ':')+1:]
				// The key the function would read, so that the copies
				// the demo sends carry it in IdempotencyKey.
				if d, _ := sqsconsumer.DeduplicationKey(r); d != "" {
					m.fileKey = "dedup:" + d
				}
				for k, a := range r.MessageAttributes {
					m.attrs[k] = sqstypes.MessageAttributeValue{DataType: aws.String(a.DataType), StringValue: a.StringValue, BinaryValue: a.BinaryValue}
				}
				ms = append(ms, m.withCredit())
			}
		case probe["routeKey"] != nil || probe["rawPath"] != nil:
			var ev events.APIGatewayV2HTTPRequest
			if err := json.Unmarshal(b, &ev); err != nil {
				skipped = append(skipped, filepath.Base(f)+" ("+err.Error()+")")
				continue
			}
			m := message{from: filepath.Base(f), kind: "http", method: ev.RequestContext.HTTP.Method, path: ev.RawPath, headers: map[string]string{}}
			if m.method == "" {
				m.method, _, _ = strings.Cut(ev.RouteKey, " ")
			}
			for k, v := range ev.Headers {
				m.headers[strings.ToLower(k)] = v
			}
			m.body = []byte(ev.Body)
			if ev.IsBase64Encoded {
				if m.body, err = base64.StdEncoding.DecodeString(ev.Body); err != nil {
					skipped = append(skipped, filepath.Base(f)+" (body is not base64)")
					continue
				}
			}
			ms = append(ms, m.withCredit())
		case probe["httpMethod"] != nil && probe["path"] != nil:
			// A REST API (payload 1.0) event: the local API serves it
			// as the HTTP API would.
			var ev events.APIGatewayProxyRequest
			if err := json.Unmarshal(b, &ev); err != nil {
				skipped = append(skipped, filepath.Base(f)+" ("+err.Error()+")")
				continue
			}
			m := message{from: filepath.Base(f), kind: "http", method: ev.HTTPMethod, path: ev.Path, headers: map[string]string{}}
			for k, v := range ev.Headers {
				m.headers[strings.ToLower(k)] = v
			}
			m.body = []byte(ev.Body)
			if ev.IsBase64Encoded {
				if m.body, err = base64.StdEncoding.DecodeString(ev.Body); err != nil {
					skipped = append(skipped, filepath.Base(f)+" (body is not base64)")
					continue
				}
			}
			ms = append(ms, m.withCredit())
		default:
			skipped = append(skipped, filepath.Base(f)+" (neither an SQS nor an API Gateway event)")
		}
	}
	return ms, skipped, nil
}

// sign signs a webhook with the local secrets, as the sender would: the
// events on disk carry signatures made with other secrets, or stale times.
func sign(m message, secrets map[string]string, now time.Time) {
	switch m.path {
	case "/webhooks/credits":
		if s := secrets["WEBHOOK_SECRET"]; s != "" {
			m.headers["x-signature"] = idemtest.HMACSignature(s, m.body)
		}
	case "/webhooks/stripe":
		if s := secrets["STRIPE_WEBHOOK_SECRET"]; s != "" {
			m.headers["stripe-signature"] = idemtest.StripeSignature(s, now, m.body)
		}
	}
}
