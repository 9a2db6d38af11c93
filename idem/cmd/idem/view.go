package main

import (
	"encoding/base64"
	"fmt"
	"time"
	"unicode/utf8"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemkit/kit/idem"
	"github.com/idemkit/kit/idem/internal/tracectx"
	"github.com/idemkit/kit/idem/internal/wire"
)

// claimView is a claim as the command shows it, in JSON and for people.
type claimView struct {
	Key         string    `json:"key"`
	Source      string    `json:"source"`
	Outcome     string    `json:"outcome"`
	ClaimedAt   time.Time `json:"claimedAt,omitzero"`
	ExpiresAt   time.Time `json:"expiresAt,omitzero"`
	Expired     bool      `json:"expired"`
	Fingerprint string    `json:"fingerprint"`
	// PayloadDigest is the payload's SHA-256 when the fingerprint is
	// another (a provider's identity, Message.Fingerprint).
	PayloadDigest string `json:"payloadDigest,omitempty"`
	Fence         int64  `json:"fence,omitempty"`
	// KeyHash is the key as the delivery's span names it (idem.key.sha256);
	// Trace is the committing delivery's trace id, when it was traced.
	KeyHash string       `json:"keySha256"`
	Trace   string       `json:"trace,omitempty"`
	Lease   *leaseView   `json:"lease,omitempty"`
	Answer  *answerView  `json:"answer,omitempty"`
	Outbox  []outboxItem `json:"outbox,omitempty"`
}

type leaseView struct {
	Until time.Time `json:"until,omitzero"` // zero: released by a failed handler
	Token int64     `json:"token"`
	ID    string    `json:"id,omitempty"`
	Live  bool      `json:"live"`
}

// answerView is the stored response: its bytes as text or base64, and,
// when they are a webhook Receiver's, the HTTP answer it replays.
type answerView struct {
	Bytes   int          `json:"bytes"`
	Text    *string      `json:"text,omitempty"`
	Base64  string       `json:"base64,omitempty"`
	Webhook *webhookView `json:"webhook,omitempty"`
	// WebhookError says why bytes expected to be a webhook's are not.
	WebhookError string `json:"webhookError,omitempty"`
}

type webhookView struct {
	Status     int               `json:"status"`
	Headers    map[string]string `json:"headers,omitempty"`
	Body       string            `json:"body"`
	BodyBase64 bool              `json:"bodyBase64,omitempty"`
}

// view is cl as shown at now; webhook says its answer is expected to be a
// webhook Receiver's (it is decoded as one anyway when it reads as one).
func view(cl *claim, now time.Time, webhook bool) claimView {
	v := claimView{Key: cl.Key, Source: cl.Source, Outcome: string(cl.Outcome), ClaimedAt: cl.ClaimedAt.UTC(),
		Expired: !cl.ExpiresAt.IsZero() && cl.ExpiresAt.Before(now), Fingerprint: cl.Fingerprint, Fence: cl.Token}
	if !cl.ExpiresAt.IsZero() {
		v.ExpiresAt = cl.ExpiresAt.UTC()
	}
	if cl.PayloadDigest != cl.Fingerprint {
		v.PayloadDigest = cl.PayloadDigest
	}
	v.KeyHash = tracectx.KeyHash(cl.Key)
	if tp, ok := cl.item[wire.TraceParentAttr].(*types.AttributeValueMemberS); ok {
		if sc, ok := tracectx.Parse(tp.Value); ok {
			v.Trace = sc.TraceID().String()
		}
	}
	if cl.Outcome == idem.Pending {
		v.Lease = &leaseView{Token: cl.Token, ID: cl.leaseID, Live: cl.LeaseUntil.After(now)}
		if !cl.LeaseUntil.IsZero() {
			v.Lease.Until = cl.LeaseUntil.UTC()
		}
	}
	if len(cl.Response) > 0 {
		v.Answer = answer(cl.Response, webhook)
	}
	return v
}

func answer(b []byte, webhook bool) *answerView {
	a := &answerView{Bytes: len(b)}
	status, headers, body, err := wire.DecodeResponse(b)
	switch {
	case err == nil:
		w := &webhookView{Status: status, Headers: headers}
		w.Body, w.BodyBase64 = textOrBase64(body)
		a.Webhook = w
		return a
	case webhook:
		a.WebhookError = "the stored answer is not a webhook Receiver's: " + err.Error()
	}
	if utf8.Valid(b) {
		s := string(b)
		a.Text = &s
	} else {
		a.Base64 = base64.StdEncoding.EncodeToString(b)
	}
	return a
}

func textOrBase64(b []byte) (string, bool) {
	if utf8.Valid(b) {
		return string(b), false
	}
	return base64.StdEncoding.EncodeToString(b), true
}

// when is t with how long ago or ahead of now it is.
func when(t, now time.Time) string {
	if t.IsZero() {
		return "-"
	}
	s := t.UTC().Format(time.RFC3339)
	if d := t.Sub(now); d >= 0 {
		return s + " (in " + span(d) + ")"
	} else {
		return s + " (" + span(-d) + " ago)"
	}
}

// span is d rounded to its two largest units: 3d4h, 5m10s, 800ms.
func span(d time.Duration) string {
	switch {
	case d < time.Second:
		return d.Round(time.Millisecond).String()
	case d < time.Minute:
		return d.Round(time.Second).String()
	case d < time.Hour:
		return fmt.Sprintf("%dm%ds", int(d/time.Minute), int(d%time.Minute/time.Second))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh%dm", int(d/time.Hour), int(d%time.Hour/time.Minute))
	}
	return fmt.Sprintf("%dd%dh", int(d/(24*time.Hour)), int(d%(24*time.Hour)/time.Hour))
}
