package main

import (
	"fmt"
	"time"
)

func (r report) outboxSection(p func(string, ...any)) {
	o := r.outbox
	if o == nil {
		return
	}
	p("## The transactional outbox\n\n")
	p("A first delivery whose effect is one credit, against the same delivery with one outgoing message besides (`Effect.Messages`: an outbox item in the same transaction), %d of each taking turns, one client, one at a time. ", o.latN)
	p("Relay: %d outbox items read from the claims table's stream (the local server's DynamoDB Streams) and handed to `outbox.Relay.Handle` in batches of 100, as the event source mapping would, sending to a local SQS (moto) with `SendMessageBatch`; the time is the relay's alone, the stream read excluded. ", o.relayN)
	p("Ledger latency: the whole local stack (`make local`: each function built with make and run under the Lambda emulator, the stream and queue event source mappings emulated), %d webhook credits one after another, from the HTTP request to the ledger entry's appearance (the credit's commit, the relay on the stream, the ledger queue, `LedgerFunction`), polled every 2 ms; the local mappings poll their stream and queue on intervals of their own, which dominate the figure.\n\n", o.e2eN)
	head, rule := r.latencyHeader("first p50 ms", "first p99 ms")
	p("| delivery | calls/first | %s\n|---|---|%s\n", head, rule)
	for _, d := range []struct {
		name   string
		passes []leasePass
	}{{"one credit", o.plain}, {"one credit and one outgoing message", o.withMessage}} {
		p("| %s | %.2f | %s |\n", d.name, d.passes[0].calls, sideBySide(2, len(r.servers), func(f, j int) string {
			return ms([]time.Duration{d.passes[j].p50, d.passes[j].p99}[f])
		}))
	}
	p("\nThe relay and the ledger latency below run on the local server and the local stack alone.\n\n")
	rate := float64(o.relayN) / o.relayTime.Seconds()
	p("| relay | messages | SendMessageBatch calls | seconds | messages/s |\n|---|---|---|---|---|\n")
	p("| `outbox.Relay` → local SQS (moto) | %d | %d | %.2f | %.0f |\n", o.relayN, o.relaySends, o.relayTime.Seconds(), rate)
	p("| `outbox.Relay` → an SQS answering at once, in process (the relay's own cost) | %d | %d | %.3f | %.0f |\n\n", o.relayN, o.relaySends, o.relayOwn.Seconds(), float64(o.relayN)/o.relayOwn.Seconds())
	p("The local SQS (moto) takes about %.0f ms of wall time per `SendMessageBatch` here, with the relay's calls of a batch in flight together (`outbox.Options.Concurrency`, 10 by default), which bounds the first line.\n\n", 1000*o.relayTime.Seconds()/float64(max(1, o.relaySends)))
	if len(o.par) > 0 {
		p("One stream batch of %d outbox items to an in-process SQS stand-in whose every `SendMessageBatch` takes %v (a round trip, `-relayrtt`), one call at a time beside the default; wall time the median of %d runs; messages per round trip = messages / (wall time / %v).\n\n", o.par[0].messages, o.parRTT, relayParRounds, o.parRTT)
		p("| relay, one batch → SQS stand-in (%v a call) | messages | SendMessageBatch calls | wall ms | messages per round trip |\n|---|---|---|---|---|\n", o.parRTT)
		for _, run := range o.par {
			p("| %s | %d | %d | %s | %.1f |\n", run.name, run.messages, run.calls, ms(run.wall), run.perRoundTrip(o.parRTT))
		}
		p("\n")
	}
	if len(o.e2e) > 0 {
		p("| delivery to ledger entry, local stack | credits | p50 ms | p99 ms |\n|---|---|---|---|\n")
		p("| webhook credit → `LedgerTable` | %d | %s | %s |\n\n", len(o.e2e), ms(percentile(o.e2e, 0.5)), ms(percentile(o.e2e, 0.99)))
	} else if o.e2eSkipped != "" {
		p("Ledger latency skipped: %s.\n\n", o.e2eSkipped)
	}
	p("Write cost, by DynamoDB's pricing: the outbox item is one more action of the transaction, 2 WRU per KB of the item (a message under 1 KB: 2 WRU), and no call more.\n\n")
}

func (r report) outboxTargets() []target {
	o := r.outbox
	if o == nil {
		return nil
	}
	out := []target{
		{"outbox: one outgoing message adds no call (1 per first delivery)",
			fmt.Sprintf("%.2f with it, %.2f without", o.withMessage[0].calls, o.plain[0].calls), o.withMessage[0].calls == 1 && o.plain[0].calls == 1},
		{"outbox: relay sends 10 messages per SendMessageBatch",
			fmt.Sprintf("%d calls for %d messages", o.relaySends, o.relayN), o.relaySends <= (o.relayN+9)/10+o.relayBatches},
	}
	if len(o.par) == 2 {
		// Concurrent calls overlap their round trips: at least half the
		// batch per round trip where one at a time sends 10.
		seq, par := o.par[0].perRoundTrip(o.parRTT), o.par[1].perRoundTrip(o.parRTT)
		out = append(out, target{"outbox: a batch's calls in flight together (half the batch or more per round trip)",
			fmt.Sprintf("%.1f messages per round trip, %.1f one call at a time", par, seq), par >= float64(o.par[1].messages)/2})
	}
	return out
}
