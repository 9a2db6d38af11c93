package idem_test

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/lambdacontext"

	"github.com/idemkit/kit/idem"
	"github.com/idemkit/kit/idem/emf"
)

// tenantCtx is an invoke's context in Lambda's tenant isolation mode.
func tenantCtx(tenant string) context.Context {
	return lambdacontext.NewContext(context.Background(), &lambdacontext.LambdaContext{AwsRequestID: "req-" + tenant, TenantID: tenant})
}

// TestTenantsHaveTheirOwnClaims: two tenants' senders may use one message
// id: each tenant's delivery is claimed and applied apart, its redelivery
// answered from its own claim (the cache's too), never another tenant's;
// their keys, outbox ids and metrics are the tenant's. With
// SharedAcrossTenants the tenants share one claim.
func TestTenantsHaveTheirOwnClaims(t *testing.T) {
	for _, tc := range []struct {
		name       string
		shared     bool
		wantCredit int
	}{
		{"scoped by tenant", false, 1000},
		{"shared across tenants", true, 500},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var metrics bytes.Buffer
			w, err := emf.New(&metrics)
			if err != nil {
				t.Fatal(err)
			}
			e := newEnv(t, func(o *idem.Options) {
				o.CacheSize = 10
				o.SharedAcrossTenants = tc.shared
				o.Observers = []idem.Observer{w}
			})
			keys := map[string]string{}
			for _, tenant := range []string{"blue", "green", "blue", "green"} {
				res, err := e.store.Process(tenantCtx(tenant), msg, e.creditHandler(nil))
				if err != nil {
					t.Fatalf("%s: %v", tenant, err)
				}
				if k, ok := keys[tenant]; ok && (res.Outcome != idem.Duplicate || res.Record.Key != k) {
					t.Errorf("%s's redelivery: want a Duplicate of its own claim %q, got %s of %q", tenant, k, res.Outcome, res.Record.Key)
				}
				keys[tenant] = res.Record.Key
			}
			if got := e.balance(t, "acc-9"); got != tc.wantCredit {
				t.Errorf("want a balance of %d, got %d", tc.wantCredit, got)
			}
			switch {
			case !tc.shared && (keys["blue"] != "#t=blue#credits#evt_001" || keys["green"] != "#t=green#credits#evt_001"):
				t.Errorf("claim keys: want each tenant's, got %v", keys)
			case tc.shared && keys["blue"] != "credits#evt_001":
				t.Errorf("shared: want the key without a tenant, got %v", keys)
			}
			if !strings.Contains(metrics.String(), `"Dimensions":[["Source"],["Source","Tenant"]]`) || !strings.Contains(metrics.String(), `"Tenant":"green"`) {
				t.Errorf("metrics: want a Source and Tenant dimension, got %s", metrics.String())
			}
		})
	}
}

// TestTenantOfAMessage: Message.Tenant, when set, is the tenant, whatever
// the invoke's; a tenant id Lambda would not take is refused, nothing
// committed.
func TestTenantOfAMessage(t *testing.T) {
	e := newEnv(t)
	m := msg
	m.Tenant = "acme"
	res, err := e.store.Process(tenantCtx("blue"), m, e.creditHandler(nil))
	if err != nil || res.Record.Key != "#t=acme#credits#evt_001" {
		t.Fatalf("want the message's tenant in its key, got %q %v", res.Record.Key, err)
	}
	for _, bad := range []string{"a#b", strings.Repeat("t", 257), "tenant\n"} {
		m.Tenant = bad
		_, err := e.store.Process(context.Background(), m, e.creditHandler(nil))
		if !errors.Is(err, idem.ErrInvalid) || !strings.Contains(err.Error(), "tenant") {
			t.Errorf("tenant %q: want an *InvalidError naming the tenant, got %v", bad, err)
		}
	}
	if got := e.balance(t, "acc-9"); got != 500 {
		t.Errorf("want one credit, got %d", got)
	}
}
