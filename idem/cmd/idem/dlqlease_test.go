package main

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/idemkit/kit/idem"
	"github.com/idemkit/kit/idem/idemtest"
	"github.com/idemkit/kit/idem/internal/wire"
	"github.com/idemkit/kit/idem/sqsconsumer"
)

// leased runs an sqsconsumer's records under a lease (Options.Lease).
func leased(o *sqsconsumer.Options) { o.Lease = &idem.LeaseOptions{} }

// failLeased sends body to the source queue s, hands its first receive to
// a leased consumer whose handler fails (a payment API down, say), and
// receives it again, so that SQS moves it to the DLQ; it returns its
// messageId. The claim is left Pending, its lease released.
func (f *fixture) failLeased(t *testing.T, d *deadLetters, s, body string, store *idem.Store) string {
	t.Helper()
	ctx := context.Background()
	url := d.url[d.names[s]]
	sent, err := d.sq.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(url), MessageBody: aws.String(body)})
	if err != nil {
		t.Fatal(err)
	}
	h, err := sqsconsumer.New(store, sqsconsumer.JSONHandler(func(context.Context, creditBody, events.SQSMessage) (idem.Effect, error) {
		return idem.Effect{}, errors.New("payout API: 503")
	}), leased)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		out, err := d.sq.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), MaxNumberOfMessages: 10,
			MessageAttributeNames: []string{"All"}, MessageSystemAttributeNames: []sqstypes.MessageSystemAttributeName{sqstypes.MessageSystemAttributeNameAll}})
		if err != nil {
			t.Fatal(err)
		}
		if i > 0 || len(out.Messages) != 1 {
			continue // the second receive moves it to the DLQ
		}
		resp, err := h(ctx, events.SQSEvent{Records: []events.SQSMessage{idemtest.Received(out.Messages[0], d.arn[d.names[s]])}})
		if err != nil || len(resp.BatchItemFailures) != 1 {
			t.Fatalf("expect the record failed, got %v, %v", resp, err)
		}
	}
	return aws.ToString(sent.MessageId)
}

// outcome is the stored outcome of the claim under key, "" when none.
func (f *fixture) outcome(key string) string {
	s, _ := f.item(key)[wire.OutcomeAttr].(*types.AttributeValueMemberS)
	if s == nil {
		return ""
	}
	return s.Value
}

// TestDLQLeasedConsumer: a leased consumer's handler fails; its claim
// stays Pending with the lease released, and SQS dead-letters the
// message. dlq classes it never-applied (nothing was committed) and
// -redrive --yes sends it back keyed as it was; the consumer's next
// delivery takes the claim over and applies it, once. A message whose
// lease a delivery still holds is left in the DLQ, its ACTION saying when
// the lease ends.
func TestDLQLeasedConsumer(t *testing.T) {
	f := setup(t)
	d := newDeadLetters(t, f.sqsClient(), false, "credits")
	credits := d.names["credits"]
	store := f.store(time.Time{})

	t.Run("released", func(t *testing.T) {
		id := f.failLeased(t, d, "credits", `{"account":"acc-1","cents":100}`, store)
		if got := f.outcome(credits + "#" + id); got != string(idem.Pending) {
			t.Fatalf("expect the claim Pending after the failure, got %q", got)
		}
		out, _ := f.mustRun(t, exitOK, "dlq", "-queue", d.dlq, "-redrive", "--yes", "-json")
		m := only(t, out)
		if m.Class != classNever || m.Action != actionRedriven || m.Key != id {
			t.Fatalf("expect never-applied %s redriven, got %s %s (%s) %q", id, m.Class, m.Key, m.Detail, m.Action)
		}
		if !strings.Contains(m.Detail, "takes the claim over") {
			t.Errorf("detail: expect the takeover named, got %q", m.Detail)
		}
		copies := d.received(t, "credits")
		if len(copies) != 1 {
			t.Fatalf("expect one copy, got %d", len(copies))
		}
		f.consumeCredits(t, copies, leased)
		f.consumeCredits(t, copies, leased) // a duplicate delivery of the copy
		if b := f.Balance(t, "acc-1"); b != 100 {
			t.Errorf("balance: expect 100, credited once, got %d", b)
		}
		if got := f.outcome(credits + "#" + id); got != string(idem.Processed) {
			t.Errorf("expect the claim Processed under the original's key, got %q", got)
		}
		if n := d.depth(t); n != 0 {
			t.Errorf("expect the DLQ empty, got %d", n)
		}
	})

	t.Run("claimed longer ago than -key-lifetime", func(t *testing.T) {
		id := f.failLeased(t, d, "credits", `{"account":"acc-3","cents":7}`, f.store(time.Now().Add(-25*time.Hour)))
		out, _ := f.mustRun(t, exitOK, "dlq", "-queue", d.dlq, "-redrive", "--yes", "-json")
		if m := only(t, out); m.Class != classPending || m.Action != "" || !strings.Contains(m.Detail, "StaleLeaseError") {
			t.Errorf("expect pending and left, naming StaleLeaseError, got %s (%s) %q", m.Class, m.Detail, m.Action)
		}
		out, _ = f.mustRun(t, exitOK, "dlq", "-queue", d.dlq, "-key-lifetime", "48h", "-redrive", "--yes", "-json")
		if m := only(t, out); m.Class != classNever || m.Action != actionRedriven || m.Key != id {
			t.Errorf("-key-lifetime 48h: expect never-applied and redriven, got %s (%s) %q", m.Class, m.Detail, m.Action)
		}
		f.consumeCredits(t, d.received(t, "credits"), func(o *sqsconsumer.Options) { o.Lease = &idem.LeaseOptions{KeyLifetime: 48 * time.Hour} })
		if b := f.Balance(t, "acc-3"); b != 7 {
			t.Errorf("balance: expect 7, got %d", b)
		}
	})

	t.Run("live", func(t *testing.T) {
		release := holdLease(context.Background(), store, credits, "live-1")
		d.fail(t, "credits", "p", map[string]string{"IdempotencyKey": "live-1"}, "", "")
		out, _ := f.mustRun(t, exitOK, "dlq", "-queue", d.dlq, "-redrive", "--yes", "-json")
		m := only(t, out)
		if m.Class != classPending || m.Claim == nil || m.Claim.Lease == nil {
			t.Fatalf("expect pending under a lease, got %s (%s)", m.Class, m.Detail)
		}
		until := m.Claim.Lease.Until.Format(time.RFC3339)
		if !strings.HasPrefix(m.Action, "left: ") || !strings.Contains(m.Action, until) {
			t.Errorf("expect the ACTION to say it is left until %s, got %q", until, m.Action)
		}
		out, _ = f.mustRun(t, exitOK, "dlq", "-queue", d.dlq, "-redrive", "--yes")
		contains(t, "the summary", out, "1 pending", "until "+until)
		if recs := d.received(t, "credits"); len(recs) != 0 {
			t.Errorf("expect nothing sent, got %d", len(recs))
		}
		if n := d.depth(t); n != 1 {
			t.Errorf("expect the message left in the DLQ, got %d", n)
		}
		if err := release(); err != nil {
			t.Fatal(err)
		}
	})
}
