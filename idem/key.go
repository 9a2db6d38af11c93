package idem

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// claimKey is what a delivery claims: its message's key, and what tells
// the message apart from another under the same key.
type claimKey struct {
	name        string                          // KeyPrefix + scope + "#" + id: the claim's partition key value
	item        map[string]types.AttributeValue // the claim's primary key, built once for its reads and writes, which must not change it
	canon       string                          // item, as a target names it (canonicalKey)
	source      string
	fingerprint string
	digest      string // the payload's SHA-256, in hex
}

// identify checks msg and returns the key it claims; when msg cannot be
// claimed, its error, with the key's name when it has one (for the log
// line).
func (s *Store) identify(msg Message) (claimKey, error) {
	name := s.keyName(msg)
	if msg.Source != "" {
		if err := s.checkSource(msg.Source); err != nil {
			return claimKey{name: name}, &InvalidError{Key: name, Reason: err.Error()}
		}
	}
	if msg.Tenant != "" {
		if err := checkTenant(msg.Tenant); err != nil {
			return claimKey{}, &InvalidError{Reason: err.Error()}
		}
	}
	switch {
	case strings.TrimSpace(msg.ID) == "": // only white space is a producer's bug, not an id
		return claimKey{}, &InvalidError{Reason: "empty message id"}
	case !utf8.ValidString(name):
		return claimKey{name: name}, &InvalidError{Key: name, Reason: "message id is not valid UTF-8"}
	case len(name) > maxPartitionKeyBytes:
		return claimKey{name: name}, &InvalidError{Key: name[:64] + "…", Reason: fmt.Sprintf("claim key is %d bytes; DynamoDB allows %d", len(name), maxPartitionKeyBytes)}
	}
	digest := Fingerprint(msg.Payload)
	fp := msg.Fingerprint
	if fp == "" {
		fp = digest
	}
	item := s.keyItem(name)
	return claimKey{name: name, item: item, canon: canonicalKey(item), source: msg.Source, fingerprint: fp, digest: digest}, nil
}

// keyName is the claim's partition key value: KeyPrefix + scope + "#" +
// id, or, for a tenant's message, KeyPrefix + "#t=" + tenant + "#" +
// scope + "#" + id. A scope is never empty and holds no "#", so no
// tenant's key is another's or a key without a tenant; and an outbox
// item's key starts KeyPrefix + "#outbox#".
func (s *Store) keyName(msg Message) string {
	scope := s.opts.Scope
	if scope == "" {
		scope = msg.Source
	}
	if scope == "" {
		scope = "default"
	}
	if msg.Tenant != "" && !s.opts.SharedAcrossTenants {
		return s.opts.KeyPrefix + "#t=" + msg.Tenant + "#" + scope + "#" + msg.ID
	}
	return s.opts.KeyPrefix + scope + "#" + msg.ID
}

// keyItem is the claim record's primary key.
func (s *Store) keyItem(name string) map[string]types.AttributeValue {
	a := s.opts.Attributes
	k := map[string]types.AttributeValue{a.Key: &types.AttributeValueMemberS{Value: name}}
	if a.SortKey != "" {
		k[a.SortKey] = &types.AttributeValueMemberS{Value: s.opts.SortKeyValue}
	}
	return k
}

// sameMessage says whether stored, a claim of k's name, holds the message
// k identifies, rather than another under its key: the same fingerprint,
// or the same bytes (as when a sender's fingerprint changed from the
// payload's digest to a provider's identity, with claims of the old kind
// still stored).
func (k claimKey) sameMessage(stored Record) bool {
	return stored.Fingerprint == k.fingerprint || stored.PayloadDigest == k.digest
}

// Fingerprint is the SHA-256 of a payload, in hex: what tells a redelivery
// from a reuse of its id.
func Fingerprint(payload []byte) string {
	sum := sha256.Sum256(payload)
	return hex.EncodeToString(sum[:])
}

// CloudWatch's limit on a dimension value (API reference, "Dimension").
const maxDimensionValueBytes = 1024

// checkSource says why source cannot be a message's Source for this Store:
// it is the metrics' dimension value, which CloudWatch takes as 1 to 1,024
// printable ASCII characters, not all spaces (it drops a metric with any
// other); and, when the Store has no Options.Scope, it is the scope of the
// message's key, which holds no "#".
func (s *Store) checkSource(source string) error {
	if err := checkMetricName("Source", source, maxDimensionValueBytes); err != nil {
		return err
	}
	if s.opts.Scope == "" && strings.Contains(source, "#") {
		return fmt.Errorf("source %q holds a \"#\", which would make claim keys ambiguous as their scope; set idem.Options.Scope, or choose a Source without one", source)
	}
	return nil
}

// checkMetricName accepts 1 to max printable ASCII characters, not all
// spaces.
func checkMetricName(what, v string, max int) error {
	switch {
	case v == "":
		return fmt.Errorf("%s is empty", what)
	case len(v) > max:
		return fmt.Errorf("%s is %d bytes; CloudWatch allows %d", what, len(v), max)
	case strings.TrimSpace(v) == "":
		return fmt.Errorf("%s is all spaces; CloudWatch needs a character that is not", what)
	}
	for i := 0; i < len(v); i++ {
		if c := v[i]; c < ' ' || c > '~' {
			return fmt.Errorf("%s %q has a control or non-ASCII character at byte %d; CloudWatch takes printable ASCII only", what, v, i)
		}
	}
	return nil
}
