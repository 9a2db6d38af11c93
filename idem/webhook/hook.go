package webhook

import "github.com/idemkit/kit/idem/internal/hook"

// The stored response's format is this package's own (encodeResponse); an
// operator's command decodes it through the hook rather than a copy.
func init() {
	hook.WebhookResponse = func(b []byte) (int, map[string]string, []byte, error) {
		r, err := decodeResponse(b)
		return r.Status, r.Headers, r.Body, err
	}
}
