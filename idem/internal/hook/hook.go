// Package hook carries, from idem to its adapters, what a Store does for
// an adapter and not for its users. It cannot name idem's types (idem
// imports it), so it holds idem's implementation untyped; the adapters
// reach it typed, through idem/internal/adapt.
package hook

// Idem is set by idem's init to a value whose methods implement
// idem/internal/adapt's hooks.
var Idem any

// WebhookResponse is set by idem/webhook's init to its stored-response
// decoder, for commands (idem/cmd/idem) that show a claim's answer as the
// Receiver would replay it; nil when idem/webhook is not linked.
var WebhookResponse func(stored []byte) (status int, headers map[string]string, body []byte, err error)
