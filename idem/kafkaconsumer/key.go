package kafkaconsumer

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/aws/aws-lambda-go/events"

	"github.com/idemkit/kit/idem/batch"
)

// KeyHeader is the record header a producer sets to name a record's
// idempotency key: HTTP's Idempotency-Key, in the lower case Kafka
// clients give header names. It plays the part of sqsconsumer's
// IdempotencyKey message attribute; a producer that writes both to SQS
// and to Kafka sets each under its own name, with one value.
const KeyHeader = "idempotency-key"

// ErrNoKey: the record carries no idempotency key.
var ErrNoKey = errors.New("kafkaconsumer: no idempotency key")

// A KeyFunc returns a record's idempotency key (batch.KeyFunc).
type KeyFunc = batch.KeyFunc[events.KafkaRecord]

// DefaultKey is the key order used when Options.Key is nil: HeaderKey,
// then OffsetKey.
func DefaultKey(rec events.KafkaRecord) (string, error) { return defaultKey(rec) }

var defaultKey = FirstKey(HeaderKey, OffsetKey)

// FirstKey returns the first non-empty key of fns, in order, stopping at the
// first error: a key that is present but unusable is not skipped over.
func FirstKey(fns ...KeyFunc) KeyFunc { return batch.FirstKey(fns...) }

// HeaderKey reads the record header idempotency-key, whose bytes must be
// UTF-8 text that is not empty, nor only white space. Kafka allows a header name more than once: repeats
// with one value are that value, repeats with two are refused. It is the
// one key that survives a producer publishing the same message again. A
// producer whose ids are binary (a UUID's 16 bytes) writes them as text,
// hex or base64, or reads them with a KeyFunc of its own.
func HeaderKey(rec events.KafkaRecord) (string, error) {
	var (
		val []byte
		n   int
	)
	for _, h := range rec.Headers {
		v, ok := h[KeyHeader]
		if !ok {
			continue
		}
		if n > 0 && !bytes.Equal(v, val) {
			return "", fmt.Errorf("kafkaconsumer: header %s appears more than once, with different values", KeyHeader)
		}
		val, n = v, n+1
	}
	switch {
	case n == 0:
		return "", nil
	case len(bytes.TrimSpace(val)) == 0: // only white space is no key either
		return "", fmt.Errorf("kafkaconsumer: header %s is empty", KeyHeader)
	case !utf8.Valid(val):
		return "", fmt.Errorf("kafkaconsumer: header %s is not UTF-8 text", KeyHeader)
	}
	return string(val), nil
}

// ClusterTag names the cluster ev came from in its records' default
// Source (Options.Source), "credits@eb841f791d20": the first 12 hex
// digits of the SHA-256 of ev's eventSourceArn, the MSK cluster's ARN;
// for self-managed Kafka, which has none, of its bootstrapServers in
// lower case, sorted, without spaces or repeats, joined by commas. So
// two event source mappings on one cluster share a tag, whatever order
// they list its servers in, and two clusters do not. It is "" for an
// event that names neither, whose records' Source is the topic alone. An
// operator gets it with
//
//	printf %s "$CLUSTER_ARN" | sha256sum | cut -c1-12
//
// A tag, not the ARN or the servers themselves: a Source is a metric
// dimension and a key's scope, which takes no "#" and should stay short.
func ClusterTag(ev events.KafkaEvent) string {
	id := ev.EventSourceARN
	if id == "" {
		var servers []string
		for s := range strings.SplitSeq(ev.BootstrapServers, ",") {
			if s = strings.ToLower(strings.TrimSpace(s)); s != "" {
				servers = append(servers, s)
			}
		}
		slices.Sort(servers)
		id = strings.Join(slices.Compact(servers), ",")
	}
	if id == "" {
		return ""
	}
	sum := sha256.Sum256([]byte(id))
	return hex.EncodeToString(sum[:6])
}

// OffsetKey is the record's place in its topic, as
//
//	topic + "/" + partition + "/" + offset
//
// ("credits/0/15"), where any "%" and "/" in the topic are written "%25"
// and "%2F" (Kafka allows neither in a topic's name; a direct invoke
// might), so no two places share a key. The topic is in the key so that
// topics sharing one Options.Source keep their offsets apart.
//
// It dedupes Lambda's redeliveries of one record only: a producer that
// publishes the message again gets a new offset, and a topic deleted and
// created again starts its offsets at 0, so a new record at an old place,
// within the claims' retention, is answered as the old one (a Duplicate,
// its effect skipped, or a key reused with another payload, failed). The
// same topic name in two clusters has the same places too, which the
// default Source keeps apart (ClusterTag), unless
// Options.SharedAcrossClusters or Options.Source merges them. Set the
// idempotency-key header, or give each incarnation of the topic its own
// Options.Source.
func OffsetKey(rec events.KafkaRecord) (string, error) {
	if rec.Partition < 0 || rec.Offset < 0 {
		return "", fmt.Errorf("kafkaconsumer: partition %d, offset %d: Kafka numbers both from 0", rec.Partition, rec.Offset)
	}
	return topicEscaper.Replace(rec.Topic) + "/" + strconv.FormatInt(rec.Partition, 10) + "/" + strconv.FormatInt(rec.Offset, 10), nil
}

var topicEscaper = strings.NewReplacer("%", "%25", "/", "%2F")
