package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/idemkit/kit/idem/sqsconsumer"
)

func (e *env) dlq(ctx context.Context, o dlqOptions) error {
	fn, err := keyFunc(o.keyFunc)
	switch {
	case err != nil:
		return err
	case o.queue == "":
		return usagef("-queue is required: the dead-letter queue to read")
	case o.max < 1:
		return usagef("-max must be at least 1")
	case o.hold < time.Second || o.hold > 12*time.Hour:
		return usagef("-hold %v: SQS takes a visibility timeout from 1s to 12h", o.hold)
	case o.wait < 0 || o.wait > 20*time.Second:
		return usagef("-wait %v: SQS long-polls from 0 to 20s", o.wait)
	case o.yes && !o.redrive && !o.deleteApplied:
		return usagef("--yes confirms -redrive or -delete-applied, and neither was given")
	}
	dlq, err := e.openQueue(ctx, o.queue)
	if err != nil {
		return err
	}
	src, how, err := e.sourceQueue(ctx, o, dlq)
	if err != nil {
		return err
	}
	source, arn := o.source, ""
	if src != nil {
		arn = src.arn
		if source == "" {
			source = sqsconsumer.QueueName(arn)
		}
	}
	if err := e.claims.checkSource(source); err != nil {
		return usagef("-source: %v", err)
	}
	if src != nil && src.fifo != dlq.fifo {
		return usagef("%s and its source queue %s are not both FIFO or both standard", dlq.name, src.name)
	}
	fmt.Fprintf(e.stderr, "dlq: %s holds about %d visible and %d in-flight messages; reading up to %d, each hidden for %v and then made visible again (each read counts a receive)\n",
		dlq.name, dlq.visible, dlq.held, o.max, o.hold)
	if src != nil {
		fmt.Fprintf(e.stderr, "dlq: source queue %s (from %s); claims' Source %q; keys by -key-func %s\n", src.url, how, source, o.keyFunc)
	}
	if dlq.redrivePolicy != "" {
		fmt.Fprintf(e.stderr, "dlq: warning: %s has a redrive policy of its own (%s): reading it counts receives toward it\n", dlq.name, dlq.redrivePolicy)
	}

	readAt := time.Now()
	msgs, err := e.read(ctx, dlq, o)
	// However the run ends, what it still holds becomes visible again,
	// even after a Ctrl-C.
	restored := false
	restore := func() {
		if !restored {
			restored = true
			e.restore(context.WithoutCancel(ctx), dlq, msgs)
		}
	}
	defer restore()
	if err != nil {
		return err
	}
	now := e.now()
	for _, m := range msgs {
		m.rec.EventSourceARN = arn
		if err := e.classify(ctx, m, fn, source, now); err != nil {
			return err
		}
	}
	if o.yes {
		// A receipt handle is good only while its message stays hidden: past
		// the hold, a copy could be sent and its original not deleted.
		if time.Since(readAt) > o.hold*9/10 {
			return failf("reading and classifying took %v, near the -hold (%v): nothing sent or deleted; run again with a longer -hold or a smaller -max", time.Since(readAt).Round(time.Second), o.hold)
		}
		e.act(ctx, o, dlq, src, msgs)
	}
	restore()
	if o.asJSON {
		enc := json.NewEncoder(e.stdout)
		for _, m := range msgs {
			if err := enc.Encode(m); err != nil {
				return err
			}
		}
		summarize(e.stderr, o, dlq, src, msgs)
		return nil
	}
	printDLQ(e.stdout, msgs, o.yes)
	summarize(e.stdout, o, dlq, src, msgs)
	return nil
}

// act redrives the never-applied messages (each deleted from the DLQ only
// once its copy was sent) and deletes the applied ones, as asked.
func (e *env) act(ctx context.Context, o dlqOptions, dlq, src *queue, msgs []*dlqMessage) {
	for _, m := range msgs {
		switch {
		case o.redrive && m.Class == classNever:
			in := &sqs.SendMessageInput{QueueUrl: aws.String(src.url), MessageBody: m.msg.Body, MessageAttributes: m.msg.MessageAttributes}
			if src.fifo {
				if m.Group == "" {
					m.Action = "not sent: a FIFO queue needs a message group, and it has none"
					continue
				}
				in.MessageGroupId = aws.String(m.Group)
				if m.DedupID != "" {
					in.MessageDeduplicationId = aws.String(m.DedupID)
				}
			}
			if _, err := e.sqs.SendMessage(ctx, in); err != nil {
				m.Action = "not sent: " + err.Error()
				continue
			}
			m.Action = "redriven"
			if err := e.deleteMessage(ctx, dlq, m); err != nil {
				m.Action = "sent, but not deleted from the DLQ (the consumer takes the copy it meets second as a Duplicate): " + err.Error()
			}
		case o.deleteApplied && m.Class == classApplied:
			m.Action = "deleted"
			if err := e.deleteMessage(ctx, dlq, m); err != nil {
				m.Action = "not deleted: " + err.Error()
			}
		}
	}
}

func (e *env) deleteMessage(ctx context.Context, dlq *queue, m *dlqMessage) error {
	_, err := e.sqs.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(dlq.url), ReceiptHandle: m.msg.ReceiptHandle})
	if err == nil {
		m.deleted = true
	}
	return err
}

func printDLQ(w io.Writer, msgs []*dlqMessage, acted bool) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	head := "MESSAGE ID\tRECEIVES\tKEY\tCLASS\tDETAIL"
	if acted {
		head += "\tACTION"
	}
	fmt.Fprintln(tw, head)
	for _, m := range msgs {
		key := m.Key
		if key == "" {
			key = "-"
		}
		line := fmt.Sprintf("%s\t%d\t%s\t%s\t%s", m.MessageID, m.ReceiveCount, key, m.Class, m.Detail)
		if acted {
			line += "\t" + m.Action
		}
		fmt.Fprintln(tw, line)
	}
	tw.Flush()
}

// summarize counts the classes, says what each calls for, and what this
// run did or would do.
func summarize(w io.Writer, o dlqOptions, dlq, src *queue, msgs []*dlqMessage) {
	count := map[string]int{}
	acted := map[string]int{}
	for _, m := range msgs {
		count[m.Class]++
		if m.Action == "redriven" || m.Action == "deleted" {
			acted[m.Action]++
		}
	}
	dest := "the source queue"
	if src != nil {
		dest = src.url
	}
	fmt.Fprintf(w, "\n%d message(s) read from %s:\n", len(msgs), dlq.name)
	if len(msgs) == o.max {
		fmt.Fprintf(w, "  (that is -max: more may wait; act on these, then run again)\n")
	}
	for _, c := range []struct{ class, advice string }{
		{classApplied, "their effect is committed: delete them (-delete-applied --yes)"},
		{classNever, "nothing of theirs is committed: send them back (-redrive --yes sends them to " + dest + ", then deletes them here)"},
		{classReused, "their key was claimed by another payload and the consumer refused them: a human decides (the runbook: the duplicate and key-reuse alarms)"},
		{classPending, "a lease holds or held their claim: see the runbook, a claim stuck pending"},
		{classNoKey, "the consumer cannot key them: fix the producer, or the -key-func and -source given here"},
	} {
		if n := count[c.class]; n > 0 {
			fmt.Fprintf(w, "  %d %s: %s\n", n, c.class, c.advice)
		}
	}
	var did []string
	if n := acted["redriven"]; n > 0 {
		did = append(did, fmt.Sprintf("sent %d to %s and deleted them from %s", n, dest, dlq.name))
	}
	if n := acted["deleted"]; n > 0 {
		did = append(did, fmt.Sprintf("deleted %d applied from %s", n, dlq.name))
	}
	switch {
	case len(did) > 0:
		fmt.Fprintf(w, "done: %s\n", strings.Join(did, "; "))
	case o.yes:
		fmt.Fprintln(w, "done: nothing to send or delete")
	case o.redrive || o.deleteApplied:
		fmt.Fprintln(w, "dry run: nothing sent or deleted; add --yes to do it")
	default:
		fmt.Fprintln(w, "nothing sent or deleted; every message read is visible again")
	}
}
