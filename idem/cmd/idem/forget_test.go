package main

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemkit/kit/idem"
	"github.com/idemkit/kit/idem/idemtest"
)

// TestForget: a final claim is deleted only with --yes, and its message
// is then processed again; a pending claim is refused without --force
// (and a live lease's late commit is fenced once it is forced); a claim
// that changed between the read and the delete stays.
func TestForget(t *testing.T) {
	f := setup(t)
	ctx := context.Background()
	store := f.store(time.Time{})
	evt := idemtest.SQSMessage("credits", `{"cents":500}`, map[string]string{"IdempotencyKey": "evt_1"})
	consume(t, store, evt)
	name := []string{"-queue", "credits", "-message-attribute", "IdempotencyKey=evt_1"}

	t.Run("a final claim: a dry run, then --yes", func(t *testing.T) {
		out, _ := f.mustRun(t, exitOK, append([]string{"forget"}, name...)...)
		contains(t, "dry run", out, "Processed", "Forgetting undoes no effect", "Warm caches", "Options.CacheSize", "Outbox: the effect sent 2 messages", "new ids",
			"dry run: nothing deleted; pass --yes")
		if f.item("credits#evt_1") == nil {
			t.Fatal("the dry run deleted the claim")
		}
		t.Logf("idem forget ... (dry run)\n%s", out)
		before := f.item("credits#evt_1")["claimedAt"].(*types.AttributeValueMemberS).Value

		out, _ = f.mustRun(t, exitOK, append([]string{"forget", "--yes"}, name...)...)
		contains(t, "--yes", out, "deleted the claim credits#evt_1")
		if f.item("credits#evt_1") != nil {
			t.Fatal("the claim is still there")
		}
		// Redelivered (to a Store with no cache), the message is processed
		// again: a new claim, a new generation of outbox ids.
		consume(t, f.store(time.Time{}), evt)
		after := f.item("credits#evt_1")
		if after == nil || after["claimedAt"].(*types.AttributeValueMemberS).Value == before || after["outcome"].(*types.AttributeValueMemberS).Value != "Processed" {
			t.Fatalf("expect a new claim, got %v", after)
		}
		if n := len(idemtest.Outbox(t, f.Client, f.Processed)); n != 4 {
			t.Errorf("expect 4 outbox items (2 a generation), got %d", n)
		}
	})

	t.Run("json", func(t *testing.T) {
		out, _ := f.mustRun(t, exitOK, append([]string{"forget", "-json"}, name...)...)
		var r forgetReport
		if err := json.Unmarshal([]byte(out), &r); err != nil || !r.DryRun || r.Deleted || r.Claim.Key != "credits#evt_1" || len(r.Notes) < 3 {
			t.Fatalf("%v: %s", err, out)
		}
	})

	t.Run("a live lease", func(t *testing.T) {
		release := holdLease(ctx, store, "payouts", "lease-1")
		out, errOut := f.mustRun(t, exitFail, "forget", "-source", "payouts", "-id", "lease-1", "--yes")
		contains(t, "refused", errOut, "Pending under a live lease", "nothing deleted (--force deletes it anyway)")
		contains(t, "notes", out, "its commit will then find no claim and apply nothing")
		if f.item("payouts#lease-1") == nil {
			t.Fatal("the live lease's claim was deleted without --force")
		}
		f.mustRun(t, exitOK, "forget", "-source", "payouts", "-id", "lease-1", "--yes", "--force")
		if err := release(); !errors.Is(err, idem.ErrFenced) {
			t.Errorf("the forgotten lease's commit: expect it fenced, got %v", err)
		}
	})

	t.Run("an ended lease", func(t *testing.T) {
		if _, err := store.ProcessLeased(ctx, idem.Message{ID: "lease-2", Source: "payouts", Payload: []byte("p")}, func(context.Context, idem.Message) (idem.Effect, error) {
			return idem.Effect{}, errors.New("the payment API timed out")
		}); err == nil {
			t.Fatal("expect the handler's error")
		}
		out, errOut := f.mustRun(t, exitFail, "forget", "-source", "payouts", "-id", "lease-2", "--yes")
		contains(t, "refused", errOut, "lease ended without a commit: its handler may have called out")
		contains(t, "notes", out, "LeaseOptions.KeyLifetime")
		out, _ = f.mustRun(t, exitOK, "forget", "-source", "payouts", "-id", "lease-2", "--yes", "--force")
		contains(t, "forced", out, "deleted the claim payouts#lease-2")
		t.Logf("idem forget -source payouts -id lease-2 --yes --force\n%s", out)
	})

	t.Run("changed between the read and the delete", func(t *testing.T) {
		consume(t, store, idemtest.SQSMessage("credits", `{"cents":9}`, map[string]string{"IdempotencyKey": "evt_2"}))
		// As a claim TTL deleted and a redelivery made again would: the
		// same key, another claim's time.
		beforeDelete = func() {
			_, err := f.Client.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: aws.String(f.Processed),
				Key:                       map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: "credits#evt_2"}},
				UpdateExpression:          aws.String("SET claimedAt = :c"),
				ExpressionAttributeValues: map[string]types.AttributeValue{":c": &types.AttributeValueMemberS{Value: "2030-01-01T00:00:00Z"}}})
			if err != nil {
				t.Error(err)
			}
		}
		defer func() { beforeDelete = func() {} }()
		_, errOut := f.mustRun(t, exitFail, "forget", "-source", "credits", "-id", "evt_2", "--yes")
		contains(t, "stderr", errOut, "the claim changed after it was read (now: Processed, claimed at 2030-01-01T00:00:00Z): nothing deleted")
		if f.item("credits#evt_2") == nil {
			t.Fatal("the changed claim was deleted")
		}
	})

	t.Run("an expired claim", func(t *testing.T) {
		if _, err := f.store(time.Now().Add(-40*24*time.Hour)).Process(ctx, idem.Message{ID: "old-1", Source: "credits", Payload: []byte("x")},
			func(context.Context, idem.Message) (idem.Effect, error) { return idem.Effect{}, nil }); err != nil {
			t.Fatal(err)
		}
		out, _ := f.mustRun(t, exitOK, "forget", "-source", "credits", "-id", "old-1", "--yes")
		contains(t, "expired", out, "already takes it as absent", "deleted the claim credits#old-1")
	})

	t.Run("missing", func(t *testing.T) {
		_, errOut := f.mustRun(t, exitFail, "forget", "-source", "credits", "-id", "evt_404", "--yes")
		contains(t, "stderr", errOut, `no claim under "credits#evt_404"`, "nothing to forget")
	})
}
