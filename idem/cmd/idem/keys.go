package main

import (
	"flag"
	"strings"

	"github.com/aws/aws-lambda-go/events"

	"github.com/idemkit/kit/idem"
	"github.com/idemkit/kit/idem/sqsconsumer"
	"github.com/idemkit/kit/idem/webhook"
)

// keyFlags name one message, as its sender and adapter know it, for
// inspect and forget; resolve derives its claim key with the adapters'
// own functions.
type keyFlags struct {
	source, queue, route                 string
	id, group, dedup, attr, idemKey, raw string
	stripe, github                       string
}

func (k *keyFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&k.source, "source", "", "the message's Source: the adapter's Options.Source, or a queue's name")
	fs.StringVar(&k.queue, "queue", "", "the SQS queue the message came from (name, URL or ARN): its name is sqsconsumer's default Source")
	fs.StringVar(&k.route, "route", "", `a webhook Mux route or http.ServeMux pattern, "METHOD /path": the Source of a Receiver left at its default`)
	fs.StringVar(&k.id, "id", "", "the message's id as given to Store.Process (an IdempotencyKey, a body's id, a messageId)")
	fs.StringVar(&k.group, "group", "", "a FIFO queue's MessageGroupId (with -dedup: sqsconsumer.DeduplicationKey)")
	fs.StringVar(&k.dedup, "dedup", "", "a FIFO queue's MessageDeduplicationId (with -group)")
	fs.StringVar(&k.attr, "message-attribute", "", "an SQS message attribute, `IdempotencyKey=value` (sqsconsumer.AttributeKey)")
	fs.StringVar(&k.idemKey, "idempotency-key", "", "a webhook's Idempotency-Key header, bare or quoted (webhook.IdempotencyKey)")
	fs.StringVar(&k.stripe, "stripe", "", "a Stripe event id, `evt_...` (the webhook.Stripe preset: Source stripe)")
	fs.StringVar(&k.github, "github", "", "a GitHub X-GitHub-Delivery `guid` (the webhook.GitHub preset: Source github)")
	fs.StringVar(&k.raw, "key", "", "the claim key itself, as stored (prefix, scope, \"#\", id)")
}

// target is the claim a subcommand acts on.
type target struct {
	key     string
	via     string // how the key was derived, for the reader
	webhook bool   // its answer is a webhook Receiver's stored response
}

// webhookDefaultSource is webhook.Options.Source's default: a Receiver
// outside a Mux, given no Source.
const webhookDefaultSource = "webhook"

// resolve derives the claim key, or says which flags are missing or
// conflict.
func (k *keyFlags) resolve(e *env) (target, error) {
	given := func(pairs ...string) []string { // pairs: flag name, value
		var names []string
		for i := 0; i < len(pairs); i += 2 {
			if pairs[i+1] != "" {
				names = append(names, "-"+pairs[i])
			}
		}
		return names
	}
	ids := given("id", k.id, "dedup", k.dedup, "message-attribute", k.attr, "idempotency-key", k.idemKey, "stripe", k.stripe, "github", k.github, "key", k.raw)
	scopes := given("source", k.source, "queue", k.queue, "route", k.route)
	switch {
	case k.group != "" && k.dedup == "":
		return target{}, usagef("-group needs -dedup: a FIFO key is the group and the deduplication id")
	case len(ids) == 0:
		return target{}, usagef("name the message: one of -id, -group/-dedup, -message-attribute, -idempotency-key, -stripe, -github or -key")
	case len(ids) > 1:
		return target{}, usagef("%s conflict: each names the message; give one", strings.Join(ids, " and "))
	case len(scopes) > 1:
		return target{}, usagef("%s conflict: each gives the Source; give one", strings.Join(scopes, " and "))
	case k.raw != "" && len(scopes) > 0:
		return target{}, usagef("-key is the whole claim key; %s has no part in it", scopes[0])
	}
	source := k.source
	if k.queue != "" {
		source = e.queueName(k.queue)
	}
	if k.route != "" {
		if !strings.Contains(k.route, " /") {
			return target{}, usagef(`-route %q: want "METHOD /path", such as "POST /charges"`, k.route)
		}
		source = k.route
	}
	t := target{}
	msg := idem.Message{Source: source}
	switch {
	case k.raw != "":
		return target{key: k.raw, via: "-key, as given"}, nil
	case k.id != "":
		msg.ID, t.via = k.id, "-id"
		t.webhook = k.route != ""
	case k.dedup != "":
		if err := k.needQueue(e, "-group/-dedup"); err != nil {
			return t, err
		}
		rec := events.SQSMessage{Attributes: map[string]string{"MessageGroupId": k.group, "MessageDeduplicationId": k.dedup}}
		msg.ID, _ = sqsconsumer.DeduplicationKey(rec)
		t.via = "sqsconsumer.DeduplicationKey"
	case k.attr != "":
		if err := k.needQueue(e, "-message-attribute"); err != nil {
			return t, err
		}
		name, value, _ := strings.Cut(k.attr, "=")
		rec := events.SQSMessage{MessageAttributes: map[string]events.SQSMessageAttribute{name: {DataType: "String", StringValue: &value}}}
		id, err := sqsconsumer.AttributeKey(rec)
		if err != nil || id == "" {
			return t, usagef("-message-attribute %q: sqsconsumer.AttributeKey reads %s=value, non-empty", k.attr, sqsconsumer.KeyAttribute)
		}
		msg.ID, t.via = id, "sqsconsumer.AttributeKey"
	case k.idemKey != "":
		if k.queue != "" {
			return t, usagef("-idempotency-key is a webhook's; -queue names an SQS queue")
		}
		id, err := webhook.IdempotencyKey("")(webhook.Header{"Idempotency-Key": k.idemKey}, nil)
		if err != nil {
			return t, usagef("-idempotency-key: %v", err)
		}
		if msg.Source == "" {
			msg.Source = webhookDefaultSource
		}
		msg.ID, t.via, t.webhook = id, "webhook.IdempotencyKey", true
	case k.stripe != "" || k.github != "":
		if k.queue != "" || k.route != "" {
			return t, usagef("the Stripe and GitHub presets set the Source (stripe, github): a %s has no part in it", scopes[0])
		}
		// The preset's own key function reads the id, as the Receiver did.
		var o webhook.Options
		id, via := k.stripe, "webhook.Stripe's key (the event's id)"
		webhook.Stripe()(&o)
		if k.github != "" {
			o, via = webhook.Options{}, "webhook.GitHub's key (X-GitHub-Delivery)"
			webhook.GitHub()(&o)
			var err error
			if id, err = o.Key(webhook.Header{"X-GitHub-Delivery": k.github}, nil); err != nil {
				return t, usagef("-github: %v", err)
			}
		}
		if msg.Source == "" { // -source: a Receiver that set its own after the preset
			msg.Source = o.Source
		}
		msg.ID, t.via, t.webhook = id, via, true
	}
	if err := e.claims.checkSource(msg.Source); err != nil {
		return t, usagef("%v", err)
	}
	t.key = e.claims.key(msg)
	return t, nil
}

// needQueue: an SQS key is scoped by the queue's name, or the consumer's
// Options.Source, unless the Store has a Scope.
func (k *keyFlags) needQueue(e *env, what string) error {
	if k.route != "" {
		return usagef("%s is an SQS key; -route names a webhook", what)
	}
	if k.queue == "" && k.source == "" && !e.scoped {
		return usagef("%s needs -queue (sqsconsumer's default Source is the queue's name) or -source (its Options.Source)", what)
	}
	return nil
}

// queueName is the name of the queue q names: a name, an ARN, a URL, or,
// with -local, a queue's logical id in the template.
func (e *env) queueName(q string) string {
	if e.local != nil {
		if url, ok := e.local.Queues[q]; ok {
			q = url
		}
	}
	if strings.Contains(q, "://") {
		q = strings.TrimRight(q, "/")
		return q[strings.LastIndexByte(q, '/')+1:]
	}
	return sqsconsumer.QueueName(q) // an ARN's last segment, a name as it is
}
