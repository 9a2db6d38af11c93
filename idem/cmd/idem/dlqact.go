package main

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/idemkit/kit/idem/sqsconsumer"
)

// Actions summarize counts.
const (
	actionRedriven = "redriven"
	actionDeleted  = "deleted"
)

// act redrives the never-applied messages (each deleted from the DLQ only
// once its copy was sent), finishes the redrive of those an earlier run
// sent, and deletes the applied ones, as asked. A message it was asked to
// act on and could not is marked undone.
//
// On a FIFO DLQ, -redrive takes each message group in its order and stops
// it at its first message that stays in the DLQ, applied ones aside: one
// not sent, or sent and not deleted, or left for a person (key-reused,
// undecodable, pending, ...). The group's later never-applied messages
// wait behind it, unsent, as the consumer itself stops a group at its
// first failure: sending them would apply them before it. The next run
// resumes the group from there.
func (e *env) act(ctx context.Context, o dlqOptions, dlq *queue, msgs []*dlqMessage, fn sqsconsumer.KeyFunc) {
	stopped := map[string]*dlqMessage{} // by message group: the message its rest waits behind
	for _, m := range msgs {
		first := stopped[m.Group]
		switch {
		case first != nil && o.redrive && m.Class == classNever:
			m.Action = fmt.Sprintf("not sent: waits behind %s (%s), the first of group %s that stays in the DLQ: a later -redrive --yes resumes the group from it, once it is sent or dealt with", first.MessageID, first.Class, m.Group)
			m.undone = true
		case o.redrive && m.Class == classNever:
			e.redrive(ctx, dlq, m, fn)
		case o.redrive && m.Class == classSent:
			// Its copy is in the source queue already: deleting it here
			// changes no order.
			m.Action = "deleted: its copy was sent by an earlier run"
			if err := e.deleteMessage(ctx, dlq, m); err != nil {
				m.Action, m.undone = "not deleted: "+err.Error(), true
			}
		case o.deleteApplied && m.Class == classApplied:
			m.Action = actionDeleted
			if err := e.deleteMessage(ctx, dlq, m); err != nil {
				m.Action, m.undone = "not deleted: "+err.Error(), true
			}
		case o.redrive && m.Class == classPending && !m.leaseTo.IsZero():
			m.Action = fmt.Sprintf("left: a delivery holds its lease until %s; -redrive --yes sends it once the lease has ended", when(m.leaseTo, e.now()))
		}
		if dlq.fifo && o.redrive && first == nil && !m.deleted && m.Class != classApplied {
			stopped[m.Group] = m
		}
	}
}

// undone counts the messages act was asked to act on and could not.
func undone(msgs []*dlqMessage) int {
	n := 0
	for _, m := range msgs {
		if m.undone {
			n++
		}
	}
	return n
}

// redrive sends m's copy to the queue it came from, remembering the send
// in a marker first, and deletes m from the DLQ once the copy is sent.
func (e *env) redrive(ctx context.Context, dlq *queue, m *dlqMessage, fn sqsconsumer.KeyFunc) {
	m.undone = true // until sent and deleted
	q := m.route.q
	if q == nil {
		m.Action = "not sent: its source queue is unknown (" + m.route.why + ")"
		return
	}
	in, err := copyInput(m, q, fn)
	if err != nil {
		m.Action = "not sent: " + err.Error()
		return
	}
	token, err := e.claims.putMarker(ctx, m, dlq, q, e.now())
	switch {
	case errors.Is(err, errMarkedSent):
		m.Class, m.Action = classSent, "not sent: an earlier run sent its copy meanwhile"
		return
	case err != nil:
		m.Action = "not sent: the redrive marker could not be written: " + err.Error()
		return
	}
	out, err := e.sqs.SendMessage(ctx, in)
	if err != nil {
		m.Action = "not sent: " + err.Error()
		if derr := e.claims.dropMarker(context.WithoutCancel(ctx), m.MessageID, token); derr != nil {
			m.Action += fmt.Sprintf(" (its redrive marker stays, saying a send began: %v)", derr)
		}
		return
	}
	copyID := aws.ToString(out.MessageId)
	m.Action = actionRedriven
	var notes []string
	if err := e.claims.markSent(context.WithoutCancel(ctx), m.MessageID, token, copyID, e.now()); err != nil {
		notes = append(notes, "its redrive marker still says the send began, so a later run may send a second copy, keyed as this one: "+err.Error())
	}
	if err := e.deleteMessage(ctx, dlq, m); err != nil {
		m.Class, m.Detail = classSent, fmt.Sprintf("its copy %s was sent to %s, and it could not be deleted here: it is not sent again; the copy is keyed as it is", copyID, q.name)
		notes = append(notes, fmt.Sprintf("not deleted from the DLQ (%v): a later run does not send it again, and deletes it with -redrive --yes", err))
	} else {
		m.undone = false
	}
	if len(notes) > 0 {
		m.Action += ", but " + strings.Join(notes, "; ")
	}
	m.Redrive = &marker{State: markerSent, Queue: q.url, Copy: copyID, At: e.now()}
}

func (e *env) deleteMessage(ctx context.Context, dlq *queue, m *dlqMessage) error {
	_, err := e.sqs.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(dlq.url), ReceiptHandle: m.msg.ReceiptHandle})
	if err == nil {
		m.deleted = true
	}
	return err
}
