package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/idemkit/kit/idem"
)

func inspectFlags(fs *flag.FlagSet) func(context.Context, *env) error {
	var k keyFlags
	k.register(fs)
	asJSON := fs.Bool("json", false, "print one JSON object instead of the table")
	return func(ctx context.Context, e *env) error {
		t, err := k.resolve(e)
		if err != nil {
			return err
		}
		v, err := e.lookup(ctx, t)
		if err != nil {
			return err
		}
		if *asJSON {
			return json.NewEncoder(e.stdout).Encode(v)
		}
		printClaim(e.stdout, v, e.now())
		return nil
	}
}

// lookup reads t's claim and the outbox items it sent; a missing claim is
// a failure that says what was looked for.
func (e *env) lookup(ctx context.Context, t target) (claimView, error) {
	cl, err := e.claims.get(ctx, t.key)
	if errors.Is(err, errOutboxItem) {
		return claimView{}, failf("%s: %v", t.key, err)
	}
	if err != nil {
		return claimView{}, err
	}
	if cl == nil {
		return claimView{}, failf("no claim under %q in %s (key from %s): the message was never claimed, its claim expired and TTL deleted it, or it was forgotten; check -prefix, -scope and the Source", t.key, e.claims.table, t.via)
	}
	v := view(cl, e.now(), t.webhook)
	if v.Outbox, err = e.claims.outbox(ctx, cl); err != nil {
		return v, err
	}
	return v, nil
}

// outboxRetention is idem.Options.OutboxRetention's default: outbox items
// older than that may be gone, sent or not.
const outboxRetention = 48 * time.Hour

// printClaim writes v for people, one field a line.
func printClaim(w io.Writer, v claimView, now time.Time) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	row := func(k, format string, a ...any) { fmt.Fprintf(tw, "%s\t%s\n", k, fmt.Sprintf(format, a...)) }
	row("key", "%s", v.Key)
	row("source", "%s", v.Source)
	row("outcome", "%s", v.Outcome)
	row("claimed at", "%s", when(v.ClaimedAt, now))
	exp := when(v.ExpiresAt, now)
	if v.Expired {
		exp += ": expired, the kit takes the claim as absent (TTL deletes it within days)"
	}
	row("expires", "%s", exp)
	row("fingerprint", "%s", v.Fingerprint)
	if v.PayloadDigest != "" {
		row("payload sha256", "%s (the fingerprint is the sender's identity of the event, not the bytes')", v.PayloadDigest)
	} else {
		row("payload sha256", "the fingerprint (the payload's SHA-256)")
	}
	if v.Trace != "" {
		row("trace", "%s (the delivery that made the claim; its span has idem.key.sha256=%s)", v.Trace, v.KeyHash)
	} else {
		row("key sha256", "%s (idem.key.sha256 on the delivery spans of this key, where traced)", v.KeyHash)
	}
	if v.Lease != nil {
		l := v.Lease
		state := "ended " + when(l.Until, now) + ": the next delivery takes it over and runs the handler again"
		switch {
		case l.Live:
			state = "live until " + when(l.Until, now) + ": a delivery is running the handler"
		case l.Until.IsZero():
			state = "released: the handler failed; the next delivery runs it again"
		}
		row("lease", "%s; fence token %d, lease id %s", state, l.Token, l.ID)
	} else if v.Fence != 0 {
		row("fence", "%d (the token of its last lease)", v.Fence)
	}
	printAnswer(row, v.Answer)
	switch {
	case len(v.Outbox) > 0:
		row("outbox", "%s sent with this claim:", plural(len(v.Outbox), "message"))
	case v.Outcome == string(idem.Pending):
		row("outbox", "none yet: a pending claim has committed nothing")
	case now.Sub(v.ClaimedAt) > outboxRetention:
		row("outbox", "none found; the claim is older than the outbox's default retention (48h), so any it sent may be gone")
	default:
		row("outbox", "none")
	}
	tw.Flush()
	for _, m := range v.Outbox {
		fmt.Fprintf(w, "  #%d  id %s → %s", m.Index, m.ID, m.Destination)
		if m.Type != "" {
			fmt.Fprintf(w, "  type %s", m.Type)
		}
		fmt.Fprintf(w, "\n      created %s, kept until %s\n", m.CreatedAt, when(m.ExpiresAt, now))
		if len(m.Attributes) > 0 {
			var kv []string
			for _, k := range slices.Sorted(maps.Keys(m.Attributes)) {
				kv = append(kv, k+"="+m.Attributes[k])
			}
			fmt.Fprintf(w, "      attributes %s\n", strings.Join(kv, " "))
		}
		fmt.Fprintf(w, "      body %s\n", m.Body)
	}
}

func printAnswer(row func(k, format string, a ...any), a *answerView) {
	switch {
	case a == nil:
		row("answer", "none stored")
	case a.Webhook != nil:
		h := a.Webhook
		var hs []string
		for _, k := range slices.Sorted(maps.Keys(h.Headers)) {
			hs = append(hs, k+": "+h.Headers[k])
		}
		row("answer", "webhook response %d (%s), replayed to every duplicate", h.Status, strings.Join(hs, "; "))
		enc := "text"
		if h.BodyBase64 {
			enc = "base64"
		}
		row("", "body (%s) %s", enc, h.Body)
	case a.Text != nil:
		row("answer", "%s, text: %s", plural(a.Bytes, "byte"), *a.Text)
	default:
		row("answer", "%s, base64: %s", plural(a.Bytes, "byte"), a.Base64)
	}
	if a != nil && a.WebhookError != "" {
		row("", "(not a webhook Receiver's stored response: %s)", a.WebhookError)
	}
}
