package webhook

import (
	"encoding/json"
	"errors"
	"fmt"
)

// StripeFingerprint is Stripe's payload identity: the event's "id", "type"
// and "created", which every attempt of one event keeps. The bytes do not:
// Stripe renders each attempt afresh, so "pending_webhooks" (the endpoints
// still waiting) and even the API version may change between attempts of
// one evt_…. A field that is absent reads as null; one of another JSON type
// is an error.
func StripeFingerprint(req Request) (string, error) {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(req.Body, &obj); err != nil || obj == nil {
		return "", errors.New("the body is not a JSON object")
	}
	var (
		id, typ *string
		created *int64
	)
	for _, f := range []struct {
		name string
		v    any
		want string
	}{{"id", &id, "a string"}, {"type", &typ, "a string"}, {"created", &created, "a whole number"}} {
		if raw, ok := obj[f.name]; ok {
			if err := json.Unmarshal(raw, f.v); err != nil {
				return "", fmt.Errorf("the body's %q field is not %s", f.name, f.want)
			}
		}
	}
	return identity("stripe", id, typ, created), nil
}

// GitHubFingerprint is GitHub's payload identity: the X-GitHub-Delivery
// GUID and the X-GitHub-Event name, which a redelivery keeps. An absent
// header reads as "".
func GitHubFingerprint(req Request) (string, error) {
	return identity("github", req.Header.Get("X-GitHub-Delivery"), req.Header.Get("X-GitHub-Event")), nil
}

// identity is a provider's name and the JSON array of parts: unambiguous
// whatever the parts hold, and readable in a log.
func identity(provider string, parts ...any) string {
	b, _ := json.Marshal(parts) // strings, numbers and nil pointers only
	return provider + ":" + string(b)
}
