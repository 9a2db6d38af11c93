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
			fmt.Sprintf("%.2f with it, %.2f without", o.withMessage[0].calls, o.plain[0].calls), o.withMessage[0].calls == 1 && o.plain[0].calls == 1},
		{"outbox: relay sends 10 messages per SendMessageBatch",
			fmt.Sprintf("%d calls for %d messages", o.relaySends, o.relayN), o.relaySends <= (o.relayN+9)/10+o.relayBatches},
	}
}
