// Command signevent signs an API Gateway event's body for a local invoke,
// now: a Stripe signature carries its time and is refused 5 minutes later,
// so a stored Stripe event must be signed again before each use.
//
//	go run -C functions ./webhook/internal/signevent < events/apigw-stripe.json > /tmp/stripe.json
//	sam local invoke WebhookFunction -e /tmp/stripe.json
//
// -scheme stripe (the default) sets Stripe-Signature; -scheme hmac sets
// X-Signature. The default secrets are the reference function's local test
// secrets.
package main

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/idemkit/kit/idem/idemtest"
)

func main() {
	scheme := flag.String("scheme", "stripe", "stripe (Stripe-Signature) or hmac (X-Signature)")
	secret := flag.String("secret", "", "signing secret; defaults to whsec_local_test (stripe) or local-webhook-secret (hmac)")
	flag.Parse()
	if err := run(os.Stdin, os.Stdout, *scheme, *secret, time.Now()); err != nil {
		fmt.Fprintln(os.Stderr, "signevent:", err)
		os.Exit(1)
	}
}

func run(in io.Reader, out io.Writer, scheme, secret string, now time.Time) error {
	dec := json.NewDecoder(in)
	dec.UseNumber() // keeps timeEpoch and friends as written
	v, err := decodeOrdered(dec)
	event, ok := v.(object)
	if err != nil || !ok {
		return fmt.Errorf("read the event: not a JSON object (%v)", err)
	}
	body, _ := event.get("body").(string)
	raw := []byte(body)
	if b64, _ := event.get("isBase64Encoded").(bool); b64 {
		if raw, err = base64.StdEncoding.DecodeString(body); err != nil {
			return fmt.Errorf("the body is marked base64 but is not: %w", err)
		}
	}
	var name, value string
	switch scheme {
	case "stripe":
		name, value = "Stripe-Signature", idemtest.StripeSignature(or(secret, "whsec_local_test"), now, raw)
	case "hmac":
		name, value = "X-Signature", idemtest.HMACSignature(or(secret, "local-webhook-secret"), raw)
	default:
		return fmt.Errorf("unknown -scheme %q; use stripe or hmac", scheme)
	}
	if v, _ := event.get("version").(string); v == "2.0" {
		name = strings.ToLower(name) // payload v2 headers are lower case
	}
	headers, _ := event.get("headers").(object)
	event.set("headers", headers.without(name).with(name, value))
	if multi, ok := event.get("multiValueHeaders").(object); ok {
		event.set("multiValueHeaders", multi.without(name).with(name, []any{value}))
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(event); err != nil {
		return err
	}
	_, err = out.Write(buf.Bytes())
	return err
}

func or(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
