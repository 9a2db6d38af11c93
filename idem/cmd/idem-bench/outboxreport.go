package main

import (
	"fmt"
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
	p("| delivery | calls/first | first p50 ms | first p99 ms |\n|---|---|---|---|\n")
	p("| one credit | %.2f | %s | %s |\n", o.plain.calls, ms(o.plain.p50), ms(o.plain.p99))
	p("| one credit and one outgoing message | %.2f | %s | %s |\n\n", o.withMessage.calls, ms(o.withMessage.p50), ms(o.withMessage.p99))
	rate := float64(o.relayN) / o.relayTime.Seconds()
	p("| relay | messages | SendMessageBatch calls | seconds | messages/s |\n|---|---|---|---|---|\n")
	p("| `outbox.Relay` → local SQS (moto) | %d | %d | %.2f | %.0f |\n", o.relayN, o.relaySends, o.relayTime.Seconds(), rate)
	p("| `outbox.Relay` → an SQS answering at once, in process (the relay's own cost) | %d | %d | %.3f | %.0f |\n\n", o.relayN, o.relaySends, o.relayOwn.Seconds(), float64(o.relayN)/o.relayOwn.Seconds())
	p("The local SQS (moto) takes about %.0f ms a `SendMessageBatch` here, which bounds the first line; a relay invoke sends its batches one after another, so a stream's throughput is about 10 messages per send's round trip per shard.\n\n", 1000*o.relayTime.Seconds()/float64(max(1, o.relaySends)))
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
	return []target{
		{"outbox: one outgoing message adds no call (1 per first delivery)",
			fmt.Sprintf("%.2f with it, %.2f without", o.withMessage.calls, o.plain.calls), o.withMessage.calls == 1 && o.plain.calls == 1},
		{"outbox: relay sends 10 messages per SendMessageBatch",
			fmt.Sprintf("%d calls for %d messages", o.relaySends, o.relayN), o.relaySends <= (o.relayN+9)/10+o.relayBatches},
	}
}
