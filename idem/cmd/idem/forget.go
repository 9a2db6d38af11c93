package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemkit/kit/idem"
)

// beforeDelete runs between forget's read and its conditional delete:
// tests change the claim there, as a concurrent delivery would.
var beforeDelete = func() {}

func forgetFlags(fs *flag.FlagSet) func(context.Context, *env) error {
	var k keyFlags
	k.register(fs)
	force := fs.Bool("force", false, "forget a Pending claim too, its lease live or ended (read what it prints first)")
	yes := fs.Bool("yes", false, "delete the claim; without it, show what would be deleted and delete nothing")
	asJSON := fs.Bool("json", false, "print one JSON object instead of text")
	return func(ctx context.Context, e *env) error {
		t, err := k.resolve(e)
		if err != nil {
			return err
		}
		return e.forget(ctx, t, *force, *yes, *asJSON)
	}
}

// forgetReport is forget's JSON.
type forgetReport struct {
	Claim   claimView `json:"claim"`
	Notes   []string  `json:"notes"`
	Refused string    `json:"refused,omitempty"`
	DryRun  bool      `json:"dryRun"`
	Deleted bool      `json:"deleted"`
}

func (e *env) forget(ctx context.Context, t target, force, yes, asJSON bool) error {
	now := e.now()
	cl, err := e.claims.get(ctx, t.key)
	if errors.Is(err, errOutboxItem) {
		return failf("%s: %v; nothing deleted", t.key, err)
	}
	if err != nil {
		return err
	}
	if cl == nil {
		return failf("no claim under %q in %s (key from %s): nothing to forget", t.key, e.claims.table, t.via)
	}
	r := forgetReport{Claim: view(cl, now, t.webhook)}
	if r.Claim.Outbox, err = e.claims.outbox(ctx, cl); err != nil {
		return err
	}
	r.Refused = refusal(r.Claim, now)
	r.Notes = consequences(r.Claim, now)
	out := func() error {
		if asJSON {
			return json.NewEncoder(e.stdout).Encode(r)
		}
		printClaim(e.stdout, r.Claim, now)
		fmt.Fprintln(e.stdout, "\nwhat forgetting this claim means:")
		for _, n := range r.Notes {
			fmt.Fprintf(e.stdout, "  - %s\n", n)
		}
		return nil
	}
	switch {
	case r.Refused != "" && !force:
		if err := out(); err != nil {
			return err
		}
		return failf("%s; nothing deleted (--force deletes it anyway)", r.Refused)
	case !yes:
		r.DryRun = true
		if err := out(); err != nil {
			return err
		}
		if !asJSON {
			fmt.Fprintf(e.stdout, "\ndry run: nothing deleted; pass --yes to delete %s\n", t.key)
		}
		return nil
	}
	beforeDelete()
	if err := e.claims.deleteUnchanged(ctx, cl); err != nil {
		if f := (*failure)(nil); errors.As(err, &f) {
			return err // contention past the retries: said as such
		}
		if !isCode(err, "ConditionalCheckFailedException") {
			return fmt.Errorf("DeleteItem %s: %w", t.key, err)
		}
		state := "gone"
		if cur, gerr := e.claims.get(ctx, t.key); gerr == nil && cur != nil {
			state = fmt.Sprintf("%s, claimed at %s", cur.Outcome, cur.ClaimedAt.UTC().Format(time.RFC3339Nano))
		}
		if err := out(); err != nil {
			return err
		}
		return failf("the claim changed after it was read (now: %s): nothing deleted; run forget again to see it as it is", state)
	}
	r.Deleted = true
	if err := out(); err != nil {
		return err
	}
	if !asJSON {
		fmt.Fprintf(e.stdout, "\ndeleted the claim %s from %s\n", t.key, e.claims.table)
	}
	return nil
}

// refusal says why cl needs --force: a claim that is not final.
func refusal(v claimView, now time.Time) string {
	switch {
	case v.Outcome == string(idem.Pending) && v.Lease != nil && v.Lease.Live:
		return fmt.Sprintf("the claim is Pending under a live lease (until %s): a delivery may be running its handler now", when(v.Lease.Until, now))
	case v.Outcome == string(idem.Pending):
		return "the claim is Pending and its lease ended without a commit: its handler may have called out before it failed"
	case v.Outcome != string(idem.Processed) && v.Outcome != string(idem.Rejected):
		return fmt.Sprintf("the claim's outcome is %q, not Processed or Rejected", v.Outcome)
	}
	return ""
}

// consequences are what an operator must know before forgetting v.
func consequences(v claimView, now time.Time) []string {
	var n []string
	if v.Expired {
		n = append(n, "The claim has expired: the kit already takes it as absent and TTL will delete it; forgetting it changes nothing for a delivery.")
	}
	if v.Outcome == string(idem.Pending) {
		n = append(n, "A pending claim has committed no effect. The next delivery of this message (a redrive, a sender's retry) is processed as a first delivery.")
	} else {
		n = append(n, "Forgetting undoes no effect: its writes stay. The next delivery of this message (a redrive, a sender's retry) is processed again and applies its effect again.")
	}
	switch l := v.Lease; {
	case l != nil && l.Live:
		n = append(n, "A delivery holds the lease: its commit will then find no claim and apply nothing (fenced), but any call it made out is made again, with the same key, by the next delivery.")
	case l != nil:
		n = append(n, "The handler may have called another service with the claim key as its Idempotency-Key before it failed or timed out. A new claim starts the claim's time over, and with it the kit's check that those services still honour the key (LeaseOptions.KeyLifetime, 24h by default): a service that has forgotten the key performs the call again.")
	}
	if v.Outcome != string(idem.Pending) && !v.Expired { // a cache keeps committed claims, until they expire
		n = append(n, fmt.Sprintf("Warm caches: an environment whose Store has Options.CacheSize (the reference functions keep 1,000 claims) and saw this claim answers its redeliveries Duplicate from memory, without reading the table, until the claim would have expired (%s) or the environment is recycled. To have it processed again at once, recycle the environments (update the function's configuration) after forgetting.", v.ExpiresAt.Format(time.RFC3339)))
		n = append(n, "Reads: a consumer reading claims before its transaction (Options.ReadFirstAbove: a redelivery to the environment that processed the message, or when a sender's duplicates are many) reads eventually consistently, and may find the forgotten claim for a moment after the delete: a redelivery sent within a second of forgetting can still be answered Duplicate. Send it again after that.")
	}
	switch {
	case len(v.Outbox) > 0:
		them := "them"
		if len(v.Outbox) == 1 {
			them = "it"
		}
		n = append(n, fmt.Sprintf("Outbox: the effect sent %s through the outbox (listed above); the relay has sent %s or is sending %s, and forgetting does not unsend %s. A reprocess sends its messages under new ids (they name the new claim's time), which their consumers take as new messages.", plural(len(v.Outbox), "message"), them, them, them))
	case v.Outcome != string(idem.Pending) && now.Sub(v.ClaimedAt) > outboxRetention:
		n = append(n, "Outbox: any messages the effect sent are gone from the outbox (kept 48h by default) and were sent; forgetting does not unsend them, and a reprocess sends new ones under new ids.")
	}
	return n
}

// deleteUnchanged deletes cl's item only if what was read of its state is
// unchanged: the outcome, the claim's time, and the lease's end, token and
// id (absent ones still absent). A claim that a delivery committed, took
// over or claimed again meanwhile stays.
func (c *claims) deleteUnchanged(ctx context.Context, cl *claim) error {
	a := c.names()
	cond := ""
	names := map[string]string{}
	values := map[string]types.AttributeValue{}
	for i, attr := range []string{a.Outcome, a.ClaimedAt, a.LeaseUntil, a.Token, a.LeaseID} {
		n, v := fmt.Sprintf("#a%d", i), fmt.Sprintf(":v%d", i)
		names[n] = attr
		if cond != "" {
			cond += " AND "
		}
		if was, ok := cl.item[attr]; ok {
			cond += n + " = " + v
			values[v] = was
		} else {
			cond += "attribute_not_exists(" + n + ")"
		}
	}
	in := &dynamodb.DeleteItemInput{TableName: aws.String(c.table), Key: c.keyItem(cl.Key), ConditionExpression: aws.String(cond),
		ExpressionAttributeNames: names}
	if len(values) > 0 {
		in.ExpressionAttributeValues = values
	}
	return retry(ctx, "DeleteItem "+cl.Key, func() error {
		_, err := c.db.DeleteItem(ctx, in)
		return err
	})
}
