package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"
	"time"
)

func (e *env) dlq(ctx context.Context, o dlqOptions) error {
	fn, err := keyFunc(o.keyFunc)
	switch {
	case err != nil:
		return err
	case o.queue == "":
		return usagef("-queue is required: the dead-letter queue to read")
	case o.body != "json" && o.body != "any":
		return usagef("-body %q: want json (the consumer decodes JSON, as sqsconsumer.JSONHandler) or any", o.body)
	case o.max < 1:
		return usagef("-max must be at least 1")
	case o.hold < time.Second || o.hold > 12*time.Hour:
		return usagef("-hold %v: SQS takes a visibility timeout from 1s to 12h", o.hold)
	case o.wait < 0 || o.wait > 20*time.Second:
		return usagef("-wait %v: SQS long-polls from 0 to 20s", o.wait)
	case o.keyLifetime <= 0:
		return usagef("-key-lifetime %v: want the consumer's LeaseOptions.KeyLifetime, a positive duration (24h by default)", o.keyLifetime)
	case o.yes && !o.redrive && !o.deleteApplied:
		return usagef("--yes confirms -redrive or -delete-applied, and neither was given")
	}
	for _, src := range append([]string{o.source.all}, slices.Collect(maps.Values(o.source.byQueue))...) {
		if err := e.claims.checkSource(src); err != nil {
			return usagef("-source: %v", err)
		}
	}
	dlq, err := e.openQueue(ctx, o.queue)
	if err != nil {
		return err
	}
	if err := e.claims.checkTable(ctx, e.claims.table); err != nil {
		return err
	}
	routes, err := e.newRoutes(ctx, o, dlq)
	if err != nil {
		return err
	}
	fmt.Fprintf(e.stderr, "dlq: %s holds about %d visible and %d in-flight messages; reading up to %d, each hidden for %v and then made visible again (each read counts a receive)\n",
		dlq.name, dlq.visible, dlq.held, o.max, o.hold)
	fmt.Fprintf(e.stderr, "dlq: %s\ndlq: keys by -key-func %s; the claims' Source: %s\n", routes.describe(), o.keyFunc, sourceText(o.source))
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
		m.route = routes.of(ctx, m)
		if err := e.classify(ctx, m, fn, o, now); err != nil {
			return err
		}
	}
	if o.yes {
		// A receipt handle is good only while its message stays hidden: past
		// the hold, a copy could be sent and its original not deleted.
		if time.Since(readAt) > o.hold*9/10 {
			return failf("reading and classifying took %v, near the -hold (%v): nothing sent or deleted; run again with a longer -hold or a smaller -max", time.Since(readAt).Round(time.Second), o.hold)
		}
		e.act(ctx, o, dlq, msgs, fn)
	}
	restore()
	if o.asJSON {
		enc := json.NewEncoder(e.stdout)
		for _, m := range msgs {
			if err := enc.Encode(m); err != nil {
				return err
			}
		}
		summarize(e.stderr, o, dlq, msgs)
	} else {
		printDLQ(e.stdout, msgs, o.yes)
		summarize(e.stdout, o, dlq, msgs)
	}
	if n := undone(msgs); n > 0 {
		// A script or a runbook step reads the exit status, not the table.
		return failf("%s not sent or not deleted (see ACTION): run -redrive --yes again once the cause is dealt with", plural(n, "message"))
	}
	return nil
}

// sourceText says what -source gives, for the header.
func sourceText(f sourceFlag) string {
	var per []string
	for _, q := range slices.Sorted(maps.Keys(f.byQueue)) {
		per = append(per, q+"="+f.byQueue[q])
	}
	switch {
	case f.all != "" && len(per) > 0:
		return fmt.Sprintf("%q (%s)", f.all, strings.Join(per, ", "))
	case f.all != "":
		return fmt.Sprintf("%q", f.all)
	case len(per) > 0:
		return strings.Join(per, ", ") + ", else each source queue's name"
	}
	return "each source queue's name (sqsconsumer's default)"
}

func printDLQ(w io.Writer, msgs []*dlqMessage, acted bool) {
	if len(msgs) == 0 {
		return
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	head := "MESSAGE ID\tRECEIVES\tSOURCE QUEUE\tKEY\tCLASS\tDETAIL"
	if acted {
		head += "\tACTION"
	}
	fmt.Fprintln(tw, head)
	dash := func(s string) string {
		if s == "" {
			return "-"
		}
		return s
	}
	for _, m := range msgs {
		line := fmt.Sprintf("%s\t%d\t%s\t%s\t%s\t%s", m.MessageID, m.ReceiveCount, dash(m.SourceQueue), dash(m.Key), m.Class, m.Detail)
		if acted {
			line += "\t" + dash(m.Action)
		}
		fmt.Fprintln(tw, line)
	}
	tw.Flush()
}

// summarize counts the classes, says what each calls for, and what this
// run did or would do.
func summarize(w io.Writer, o dlqOptions, dlq *queue, msgs []*dlqMessage) {
	count := map[string]int{}
	sentTo := map[string]int{} // by source queue
	sent, kept, deleted, finished, failed := 0, 0, 0, 0, 0
	for _, m := range msgs {
		count[m.Class]++
		switch {
		case strings.HasPrefix(m.Action, "not "):
			failed++
		case strings.HasPrefix(m.Action, actionRedriven):
			sent++
			sentTo[m.SourceQueue]++
			if !m.deleted {
				kept++
			}
		case m.Action == actionDeleted:
			deleted++
		case m.deleted: // an earlier run's copy-sent message
			finished++
		}
	}
	if len(msgs) == 0 {
		fmt.Fprintf(w, "no messages read from %s: none was visible\n", dlq.name)
		return
	}
	fmt.Fprintf(w, "\n%s read from %s:\n", plural(len(msgs), "message"), dlq.name)
	if len(msgs) == o.max {
		fmt.Fprintf(w, "  (that is -max: more may wait; act on these, then run again)\n")
	}
	for _, c := range []struct{ class, advice string }{
		{classApplied, "the effect is committed: delete (-delete-applied --yes)"},
		{classNever, "nothing is committed: send back (-redrive --yes sends each to the queue it came from, keyed as it was, then deletes it here)"},
		{classSent, "a -redrive sent the copy and could not delete it here: it is not sent again; -redrive --yes deletes it, and once the copy is applied it classes applied"},
		{classUndecodable, "nothing is committed, and the body is not what the consumer decodes (-body json): not redriven. Fix the producer and send corrected messages, then delete these by hand; or, once the consumer takes such bodies, redrive with -body any"},
		{classReused, "the key was claimed by another payload and the consumer refused it: a human decides (the runbook: the duplicate and key-reuse alarms)"},
		{classPending, pendingAdvice(msgs)},
		{classNoKey, "the consumer cannot key it: fix the producer, or the -key-func and -source given here"},
		{classNoSource, "the queue it came from is unknown: not redriven; -source-queue names it"},
	} {
		if n := count[c.class]; n > 0 {
			fmt.Fprintf(w, "  %d %s: %s\n", n, c.class, c.advice)
		}
	}
	var did []string
	if sent > 0 {
		var to []string
		for _, q := range slices.Sorted(maps.Keys(sentTo)) {
			to = append(to, fmt.Sprintf("%d to %s", sentTo[q], q))
		}
		d := "sent " + strings.Join(to, ", ")
		them, they := "them", "they are"
		if kept == 1 || kept == 0 && sent == 1 {
			them, they = "it", "it is"
		}
		switch {
		case kept == 0:
			d += fmt.Sprintf(" and deleted %s from %s", them, dlq.name)
		case kept == sent:
			d += fmt.Sprintf(", not deleted from %s (see ACTION): run -redrive --yes again to delete %s; %s not sent again", dlq.name, them, they)
		default:
			d += fmt.Sprintf("; %d of them not deleted from %s (see ACTION): run -redrive --yes again to delete %s; %s not sent again", kept, dlq.name, them, they)
		}
		did = append(did, d)
	}
	if finished > 0 {
		did = append(did, fmt.Sprintf("deleted %d whose copy an earlier run sent", finished))
	}
	if deleted > 0 {
		did = append(did, fmt.Sprintf("deleted %d applied from %s", deleted, dlq.name))
	}
	if failed > 0 {
		did = append(did, fmt.Sprintf("%d not sent or not deleted (see ACTION)", failed))
	}
	switch {
	case undone(msgs) > 0 && len(did) == 1 && failed > 0:
		fmt.Fprintf(w, "not done: %s\n", strings.Join(did, "; "))
	case undone(msgs) > 0:
		fmt.Fprintf(w, "partly done: %s\n", strings.Join(did, "; "))
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

// pendingAdvice says what the pending messages call for: a live lease is
// left until it ends (the latest end read is named), a claim too old for
// a new lease needs a person.
func pendingAdvice(msgs []*dlqMessage) string {
	var last time.Time
	stale := 0
	for _, m := range msgs {
		switch {
		case m.Class != classPending:
		case m.leaseTo.IsZero():
			stale++
		case m.leaseTo.After(last):
			last = m.leaseTo
		}
	}
	var s []string
	if !last.IsZero() {
		s = append(s, fmt.Sprintf("a delivery holds the lease, maybe running the handler now: left in the DLQ until the lease ends (until %s at the latest), then -redrive --yes sends it", last.UTC().Format(time.RFC3339)))
	}
	if stale > 0 {
		s = append(s, "claimed longer ago than -key-lifetime, so a leased consumer takes no new lease: see the runbook, a claim stuck pending")
	}
	return strings.Join(s, "; ")
}
