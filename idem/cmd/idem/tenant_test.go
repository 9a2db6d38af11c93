package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/lambdacontext"

	"github.com/idemkit/kit/idem/idemtest"
	"github.com/idemkit/kit/idem/sqsconsumer"
)

// TestTenant: in Lambda's tenant isolation mode each tenant's claims are
// its own; -tenant names whose the command reads: inspect finds that
// tenant's claim of a message, list only that tenant's claims, and a
// tenant id Lambda would not take is a usage error.
func TestTenant(t *testing.T) {
	f := setup(t)
	store := f.store(time.Time{})
	h, err := sqsconsumer.New(store, credit)
	if err != nil {
		t.Fatal(err)
	}
	for _, tenant := range []string{"blue", "green"} {
		ctx := lambdacontext.NewContext(context.Background(), &lambdacontext.LambdaContext{AwsRequestID: "req", TenantID: tenant})
		msg := idemtest.SQSMessage("credits", `{"cents":500}`, map[string]string{sqsconsumer.KeyAttribute: "evt_1"})
		if resp, err := h(ctx, idemtest.SQSEvent(msg)); err != nil || len(resp.BatchItemFailures) > 0 {
			t.Fatalf("%s: %v %v", tenant, resp, err)
		}
	}
	out, _ := f.mustRun(t, exitOK, "inspect", "-tenant", "blue", "-queue", "credits", "-id", "evt_1")
	contains(t, "inspect", out, "#t=blue#credits#evt_1", "Processed")
	out, _ = f.mustRun(t, exitOK, "list", "-tenant", "green")
	contains(t, "list", out, "#t=green#credits#evt_1", "1 claim")
	if strings.Contains(out, "#t=blue#") {
		t.Errorf("list -tenant green shows blue's claims:\n%s", out)
	}
	_, errOut := f.mustRun(t, exitUsage, "inspect", "-tenant", "a#b", "-queue", "credits", "-id", "evt_1")
	contains(t, "stderr", errOut, "-tenant", "tenant")
}
