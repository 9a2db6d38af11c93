package webhook

import (
	"encoding/json"
	"fmt"
	"strconv"
)

// stripeFingerprint is Stripe's payload identity: the event's "id", "type"
// and "created", which every attempt of one event keeps. The bytes do not:
// Stripe renders each attempt afresh, so "pending_webhooks" (the endpoints
// still waiting) and even the API version may change between attempts of
// one evt_…. A field that is absent reads as null; one of another JSON type
// is an error.
func stripeFingerprint(req Request) (string, error) {
	raw, err := topFields(req.Body, "id", "type", "created")
	if err != nil {
		return "", err
	}
	var (
		id, typ *string
		created *int64
	)
	for i, f := range []struct {
		name string
		v    any
		want string
	}{{"id", &id, "a string"}, {"type", &typ, "a string"}, {"created", &created, "a whole number"}} {
		if raw[i] != nil {
			if err := json.Unmarshal(raw[i], f.v); err != nil {
				return "", fmt.Errorf("the body's %q field is not %s", f.name, f.want)
			}
		}
	}
	return identity("stripe", id, typ, created), nil
}

// gitHubFingerprint is GitHub's payload identity: the X-GitHub-Delivery
// GUID and the X-GitHub-Event name, which a redelivery keeps. An absent
// header reads as "".
func gitHubFingerprint(req Request) (string, error) {
	return identity("github", req.Header.Get("X-GitHub-Delivery"), req.Header.Get("X-GitHub-Event")), nil
}

// identity is a provider's name and its parts as a list, each string
// quoted (Go's quoting, which is JSON's for printable ASCII): unambiguous
// whatever the parts hold, readable in a log, and built without reflection.
func identity(provider string, parts ...any) string {
	b := make([]byte, 0, 96)
	b = append(append(b, provider...), ":["...)
	for i, p := range parts {
		if i > 0 {
			b = append(b, ',')
		}
		switch v := p.(type) {
		case string:
			b = strconv.AppendQuote(b, v)
		case *string:
			if v == nil {
				b = append(b, "null"...)
			} else {
				b = strconv.AppendQuote(b, *v)
			}
		case *int64:
			if v == nil {
				b = append(b, "null"...)
			} else {
				b = strconv.AppendInt(b, *v, 10)
			}
		}
	}
	return string(append(b, ']'))
}
