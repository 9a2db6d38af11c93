// Package wire is what the kit stores, as every package that reads it
// reads it: a claim record's default attribute names, an outbox item's
// attributes and id, the EventBridge detail the relay sends, and what SQS
// and EventBridge take as a message. The kit writes them (idem), its
// relay, tests and commands read them (idem/outbox, idemtest, idem/cmd),
// none another way.
package wire

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// A claim record's attribute names where idem.Options.Attributes leaves one
// empty (its field docs say so, each once).
const (
	ClaimKeyAttr      = "pk"
	ExpiresAtAttr     = "expiresAt"
	ClaimedAtAttr     = "claimedAt"
	SourceAttr        = "source"
	FingerprintAttr   = "fingerprint"
	PayloadDigestAttr = "payloadDigest"
	OutcomeAttr       = "outcome"
	ResponseAttr      = "response"
	LeaseUntilAttr    = "leaseUntil"
	TokenAttr         = "fence"
	LeaseIDAttr       = "leaseId"
)

// An outbox item's attribute names, besides the table's key and its TTL
// attribute (idem.Options.Attributes.Key, SortKey and ExpiresAt).
const (
	KindAttr        = "kind"        // Kind (S): tells outbox items from claims in a shared table
	IDAttr          = "outboxId"    // the message's id (S)
	DestinationAttr = "destination" // OutgoingMessage.Destination (S)
	TypeAttr        = "type"        // OutgoingMessage.Type (S), absent when empty
	BodyAttr        = "body"        // OutgoingMessage.Body (S)
	AttributesAttr  = "attributes"  // OutgoingMessage.Attributes (M of S), absent when empty
	GroupAttr       = "groupId"     // OutgoingMessage.GroupID or its default (S)
	ClaimAttr       = "claimKey"    // the claim key of the message that sent it (S)
	CreatedAtAttr   = "createdAt"   // when it was written, RFC 3339 (S)
	IndexAttr       = "index"       // its index in Effect.Messages (N)
	TraceParentAttr = "traceparent" // the committing delivery's W3C trace context (S), on outbox items and claims; absent when untraced

	// Kind is the value of KindAttr on every outbox item.
	Kind = "outbox"
)

// ID is the id of the outgoing message at index i of the effect committed
// with a claim: of table (the processed-ids table), under key, claimed at
// claimedAt. The claim's time is its generation: a message claimed again
// once its claim expired is another message, and its outgoing messages
// get other ids, as do those of another table's claim under the same key.
// 32 hex digits, fit for an SQS deduplication id and a message attribute.
func ID(table, key string, claimedAt time.Time, i int) string {
	h := sha256.New()
	for _, part := range []string{"idem.outbox.v2", table, key, claimedAt.UTC().Format(time.RFC3339Nano), strconv.Itoa(i)} {
		// Each part with its length: no two lists of parts read the same.
		h.Write(strconv.AppendInt(nil, int64(len(part)), 10))
		h.Write([]byte{':'})
		h.Write([]byte(part))
	}
	return hex.EncodeToString(h.Sum(nil)[:16])
}

// KeyField is the detail field the relay adds to an EventBridge event.
const KeyField = "idempotencyKey"

// CheckDetail says why body cannot be an EventBridge event's detail: it
// must be a JSON object without a top-level field that encoding/json, which
// matches field names case-insensitively and keeps the last it reads, would
// take for KeyField ("IdempotencyKey", "IDEMPOTENCYKEY", …): such a field
// would shadow the key the relay adds for a Go consumer.
func CheckDetail(body string) error {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal([]byte(body), &fields); err != nil || fields == nil {
		return errors.New("it is not a JSON object")
	}
	for name := range fields {
		// strings.EqualFold folds as encoding/json does (Unicode simple
		// folding, the Kelvin sign included).
		if strings.EqualFold(name, KeyField) {
			return fmt.Errorf("it has a top-level %q field, which a Go decoder takes for the %q the relay adds", name, KeyField)
		}
	}
	return nil
}

// Detail is the EventBridge detail the relay sends for the outbox item id
// whose body passed CheckDetail: the body with KeyField first.
func Detail(key, body string) string {
	rest := strings.TrimSpace(strings.TrimSpace(body)[1:]) // after the object's "{"
	sep := ","
	if rest == "}" {
		sep = ""
	}
	return `{"` + KeyField + `":` + strconv.Quote(key) + sep + rest
}

// reservedAttributes are the SQS message attributes the relay sets.
var reservedAttributes = []string{"IdempotencyKey", "Type"}

// Message is an outgoing message as the relay sends it (idem.OutgoingMessage).
type Message struct {
	Destination, Type, Body, GroupID string
	Attributes                       map[string]string
}

// CheckMessage refuses, before anything commits, a message its
// destination would refuse: once committed, such a message would fail the
// relay on every retry and end at its on-failure destination, unsent.
// maxBytes bounds it as SQS counts a message (idem.OutgoingMessage.Body's doc).
func CheckMessage(m Message, maxBytes int) error {
	if err := checkDestination(m); err != nil {
		return err
	}
	switch {
	case m.Body == "":
		return errors.New("empty Body")
	case !sqsText(m.Body):
		return errors.New("the Body is not valid UTF-8 or holds a character SQS refuses (a control character other than tab, LF and CR, or U+FFFE/U+FFFF)")
	case !sqsText(m.Type) || !utf8.ValidString(m.GroupID):
		return errors.New("the Type or GroupID is not valid UTF-8, or Type holds a character SQS refuses")
	case len(m.Attributes) > 8:
		return fmt.Errorf("%d Attributes; SQS takes 10 a message, two of them the relay's IdempotencyKey and Type", len(m.Attributes))
	}
	// As SQS counts a message's size: its body, and each attribute's name,
	// type ("String") and value, the relay's two included.
	size := len(m.Body) + len("IdempotencyKey") + 32 + len("Type") + len(m.Type) + 2*len("String")
	for k, v := range m.Attributes {
		if err := checkAttributeName(k); err != nil {
			return err
		}
		if v == "" || !sqsText(v) {
			return fmt.Errorf("attribute %q: its value is empty, not valid UTF-8, or holds a character SQS refuses", k)
		}
		size += len(k) + len("String") + len(v)
	}
	if size > maxBytes {
		return fmt.Errorf("the message is %d bytes with its attributes; the limit is %d", size, maxBytes)
	}
	return nil
}

func checkDestination(m Message) error {
	if bus, ok := strings.CutPrefix(m.Destination, "eventbridge:"); ok {
		switch {
		case bus == "":
			return fmt.Errorf("the Destination %q names no event bus", m.Destination)
		case m.Type == "":
			return errors.New("an EventBridge event needs a Type, its detail-type")
		}
		if err := CheckDetail(m.Body); err != nil {
			return fmt.Errorf("an EventBridge event's Body is its detail, and %v", err)
		}
		return nil
	}
	u, err := url.Parse(m.Destination)
	if m.Destination == "" {
		return errors.New("no Destination")
	}
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || len(strings.Split(strings.Trim(u.Path, "/"), "/")) != 2 || strings.Contains(strings.Trim(u.Path, "/"), "//") {
		return fmt.Errorf("the Destination %q is neither an SQS queue URL (https://sqs.<region>.amazonaws.com/<account>/<queue>) nor \"eventbridge:\" and a bus", m.Destination)
	}
	return nil
}

// checkAttributeName applies SQS's rules for a message attribute's name.
func checkAttributeName(k string) error {
	for _, r := range reservedAttributes {
		if strings.EqualFold(k, r) {
			return fmt.Errorf("attribute %q is the relay's own", k)
		}
	}
	ok := k != "" && len(k) <= 256 && !strings.HasPrefix(k, ".") && !strings.HasSuffix(k, ".") && !strings.Contains(k, "..")
	lower := strings.ToLower(k)
	ok = ok && !strings.HasPrefix(lower, "aws.") && !strings.HasPrefix(lower, "amazon.")
	for i := 0; ok && i < len(k); i++ {
		c := k[i]
		ok = c == '_' || c == '-' || c == '.' || ('0' <= c && c <= '9') || ('a' <= c && c <= 'z') || ('A' <= c && c <= 'Z')
	}
	if !ok {
		return fmt.Errorf("attribute name %q: SQS takes 1 to 256 of A-Z a-z 0-9 _ - . (no leading, trailing or doubled period, no AWS. or Amazon. prefix)", k)
	}
	return nil
}

// sqsText says whether SQS takes s in a body or an attribute value: valid
// UTF-8 of #x9, #xA, #xD, #x20-#xD7FF, #xE000-#xFFFD and #x10000-#x10FFFF.
func sqsText(s string) bool {
	if !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		if r < 0x20 && r != '\t' && r != '\n' && r != '\r' || r == 0xFFFE || r == 0xFFFF {
			return false
		}
	}
	return true
}
