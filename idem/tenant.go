package idem

import (
	"context"
	"fmt"

	"github.com/aws/aws-lambda-go/lambdacontext"
)

// withTenant is msg with its Tenant, when it names none, taken from the
// invoke's context: Lambda's tenant isolation mode hands each invoke its
// tenant id.
func withTenant(ctx context.Context, msg Message) Message {
	if msg.Tenant == "" {
		if lc, ok := lambdacontext.FromContext(ctx); ok {
			msg.Tenant = lc.TenantID
		}
	}
	return msg
}

// maxTenantBytes is Lambda's limit on a tenant id (API reference, Invoke:
// X-Amz-Tenant-Id).
const maxTenantBytes = 256

// checkTenant accepts what Lambda takes as a tenant id: 1 to 256 of
// [a-zA-Z0-9._:/=+-@ ], none of which is the "#" that ends the tenant in a
// claim key.
func checkTenant(t string) error {
	if len(t) > maxTenantBytes {
		return fmt.Errorf("tenant is %d bytes; Lambda allows %d", len(t), maxTenantBytes)
	}
	for i := 0; i < len(t); i++ {
		c := t[i]
		ok := 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '.' || c == '_' || c == ':' ||
			c == '/' || c == '=' || c == '+' || c == '-' || c == '@' || c == ' '
		if !ok {
			return fmt.Errorf("tenant %q has %q at byte %d; a tenant id takes letters, digits and . _ : / = + - @ and space", t, c, i)
		}
	}
	return nil
}
