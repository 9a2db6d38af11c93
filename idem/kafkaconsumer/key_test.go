package kafkaconsumer_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/idemkit/kit/idem"
	"github.com/idemkit/kit/idem/idemtest"
	"github.com/idemkit/kit/idem/kafkaconsumer"
)

// headers is a record's headers, one map per header, in order, as Lambda
// hands them over.
func headers(kv ...string) []map[string]events.JSONNumberBytes {
	var hs []map[string]events.JSONNumberBytes
	for i := 0; i+1 < len(kv); i += 2 {
		hs = append(hs, map[string]events.JSONNumberBytes{kv[i]: events.JSONNumberBytes(kv[i+1])})
	}
	return hs
}

func TestDefaultKey(t *testing.T) {
	const k = kafkaconsumer.KeyHeader
	at := func(topic string, partition, offset int64, hs []map[string]events.JSONNumberBytes) events.KafkaRecord {
		return events.KafkaRecord{Topic: topic, Partition: partition, Offset: offset, Headers: hs}
	}
	for _, tc := range []struct {
		name  string
		rec   events.KafkaRecord
		want  string
		error string
	}{
		{"the header first", at("credits", 0, 15, headers("traceparent", "00-x", k, "evt-1")), "evt-1", ""},
		{"the header twice, one value", at("credits", 0, 15, headers(k, "evt-1", k, "evt-1")), "evt-1", ""},
		{"an opaque key: NUL, CR LF", at("credits", 0, 15, headers(k, "k\x00\r\n")), "k\x00\r\n", ""},
		{"no header: the offset", at("credits", 0, 15, nil), "credits/0/15", ""},
		{"other headers: the offset", at("credits", 3, 0, headers("Idempotency-Key", "evt-1", "headerKey", "v")), "credits/3/0", ""},
		{"a slash in the topic", at("a/b", 1, 2, nil), "a%2Fb/1/2", ""},
		{"a percent sign in the topic", at("a%2Fb", 1, 2, nil), "a%252Fb/1/2", ""},
		{"the header twice, two values", at("credits", 0, 15, headers(k, "evt-1", k, "evt-2")), "", "more than once, with different values"},
		{"an empty header", at("credits", 0, 15, headers(k, "")), "", "is empty"},
		{"a null header", at("credits", 0, 15, []map[string]events.JSONNumberBytes{{k: nil}}), "", "is empty"},
		{"a header of only spaces", at("credits", 0, 15, headers(k, "   ")), "", "is empty"},
		{"a binary header", at("credits", 0, 15, headers(k, "\x76\xdc\x00\x7f\x80")), "", "not UTF-8 text"},
		{"a negative offset", at("credits", 0, -1, nil), "", "Kafka numbers both from 0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := kafkaconsumer.DefaultKey(tc.rec)
			if tc.error != "" {
				if err == nil || !strings.Contains(err.Error(), tc.error) {
					t.Fatalf("expect an error saying %q, got %q, %v", tc.error, got, err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("expect %q, got %q, %v", tc.want, got, err)
			}
		})
	}
}

func TestFirstKeyStopsAtAnError(t *testing.T) {
	bad := errors.New("bad")
	never := func(events.KafkaRecord) (string, error) { t.Fatal("called after an error"); return "", nil }
	fn := kafkaconsumer.FirstKey(
		func(events.KafkaRecord) (string, error) { return "", nil },
		func(events.KafkaRecord) (string, error) { return "", bad },
		never,
	)
	if _, err := fn(events.KafkaRecord{}); !errors.Is(err, bad) {
		t.Fatalf("expect %v, got %v", bad, err)
	}
}

// demo is the ClusterTag of idemtest.KafkaEvent's cluster: the first 12
// hex digits of the SHA-256 of its ARN, written out so that a change of
// the stored keys' scope cannot pass unseen.
const demo = "eb841f791d20"

// TestKeysAndScopes: the claim keys records get (Source "#" key), and
// what they make of one id in two topics and of a message published
// twice.
func TestKeysAndScopes(t *testing.T) {
	const body = `{"account":"acc-1","cents":1}`
	refund := func(offset int64, key string) events.KafkaRecord {
		var h map[string]string
		if key != "" {
			h = map[string]string{kafkaconsumer.KeyHeader: key}
		}
		return idemtest.KafkaRecord("refunds", 0, offset, body, h)
	}
	for _, tc := range []struct {
		name    string
		recs    []events.KafkaRecord
		opt     func(*kafkaconsumer.Options)
		keys    []string
		balance int
	}{
		{"the header: scoped by the topic and cluster", []events.KafkaRecord{rec(0, 15, body, "evt-1")}, nil, []string{"credits@" + demo + "#evt-1"}, 1},
		{"no header: the offset", []events.KafkaRecord{rec(0, 15, body, "")}, nil, []string{"credits@" + demo + "#credits/0/15"}, 1},
		{"one id in two topics: two messages", []events.KafkaRecord{rec(0, 15, body, "evt-1"), refund(15, "evt-1")}, nil,
			[]string{"credits@" + demo + "#evt-1", "refunds@" + demo + "#evt-1"}, 2},
		{"one id in two topics under one Source: one message", []events.KafkaRecord{rec(0, 15, body, "evt-1"), refund(15, "evt-1")},
			func(o *kafkaconsumer.Options) { o.Source = "payments" }, []string{"payments#evt-1", "payments#evt-1"}, 1},
		{"one offset in two topics under one Source: two messages", []events.KafkaRecord{rec(0, 15, body, ""), refund(15, "")},
			func(o *kafkaconsumer.Options) { o.Source = "payments" }, []string{"payments#credits/0/15", "payments#refunds/0/15"}, 2},
		{"shared across clusters: the topic alone", []events.KafkaRecord{rec(0, 15, body, "evt-1")},
			func(o *kafkaconsumer.Options) { o.SharedAcrossClusters = true }, []string{"credits#evt-1"}, 1},
		{"published twice with the header: once", []events.KafkaRecord{rec(0, 15, body, "evt-1"), rec(0, 16, body, "evt-1")}, nil,
			[]string{"credits@" + demo + "#evt-1", "credits@" + demo + "#evt-1"}, 1},
		{"published twice without it: twice (a new offset)", []events.KafkaRecord{rec(0, 15, body, ""), rec(0, 16, body, "")}, nil,
			[]string{"credits@" + demo + "#credits/0/15", "credits@" + demo + "#credits/0/16"}, 2},
	} {
		for _, mode := range modes {
			t.Run(tc.name+"/"+mode.name, func(t *testing.T) {
				e := newEnv(t)
				opt := tc.opt
				if opt == nil {
					opt = func(*kafkaconsumer.Options) {}
				}
				checkFailed(t, e.run(t, context.Background(), idemtest.KafkaEvent(tc.recs...), opt, mode.opt))
				if got := e.seen.keys(); !slices.Equal(got, tc.keys) {
					t.Errorf("claim keys: want %q, got %q", tc.keys, got)
				}
				e.seen.take()
				e.checkBalances(t, map[string]int{"acc-1": tc.balance})
				checkFailed(t, e.run(t, context.Background(), idemtest.KafkaEvent(tc.recs...), opt, mode.opt)) // redelivered
				checkOutcomes(t, e.seen.take(), map[idem.Outcome]int{idem.Duplicate: len(tc.recs)})
				e.checkBalances(t, map[string]int{"acc-1": tc.balance})
			})
		}
	}
}

// TestClusterTag: the tag is the MSK cluster's ARN's, or a self-managed
// cluster's servers' in any order, case or spacing; none without either.
func TestClusterTag(t *testing.T) {
	for _, tc := range []struct {
		name string
		ev   events.KafkaEvent
		want string
	}{
		{"MSK: the ARN", idemtest.KafkaEvent(), demo},
		{"MSK: the ARN, not the servers", events.KafkaEvent{EventSourceARN: idemtest.KafkaEvent().EventSourceARN, BootstrapServers: "other:9092"}, demo},
		{"self-managed", events.KafkaEvent{EventSource: "SelfManagedKafka", BootstrapServers: "kafka-1.example.com:9092,kafka-2.example.com:9092"}, "e99c63635b52"},
		{"self-managed, listed otherwise", events.KafkaEvent{EventSource: "SelfManagedKafka", BootstrapServers: " Kafka-2.example.com:9092, kafka-1.example.com:9092,kafka-2.example.com:9092"}, "e99c63635b52"},
		{"neither", events.KafkaEvent{}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := kafkaconsumer.ClusterTag(tc.ev); got != tc.want {
				t.Errorf("want %q, got %q", tc.want, got)
			}
		})
	}
}

// TestTwoClustersOneTopic: two event source mappings on one function read
// one topic name from two clusters (an MSK cluster and a self-managed
// one, or two MSK clusters); a record of each at the same partition and
// offset, keyed by its place or by one header value, is two messages,
// each applied once and each redelivery its own cluster's Duplicate.
// SharedAcrossClusters keeps the scope of before, the topic alone: the
// second is then skipped as the first's Duplicate.
func TestTwoClustersOneTopic(t *testing.T) {
	const body = `{"account":"acc-1","cents":1}`
	// Each event of its own: a map of records is shared by copies.
	msk := func(key string) events.KafkaEvent { return idemtest.KafkaEvent(rec(0, 15, body, key)) }
	other := func(key string) events.KafkaEvent {
		ev := msk(key)
		ev.EventSourceARN = "arn:aws:kafka:eu-west-1:123456789012:cluster/other-cluster/0c7e3a1d-5b2f-4e6a-9d8c-1f2e3d4c5b6a-1"
		return ev
	}
	selfManaged := func(key string) events.KafkaEvent {
		ev := msk(key)
		ev.EventSource, ev.EventSourceARN, ev.BootstrapServers = "SelfManagedKafka", "", "kafka-1.example.com:9092,kafka-2.example.com:9092"
		return ev
	}
	for _, tc := range []struct {
		name    string
		a, b    events.KafkaEvent
		opt     func(*kafkaconsumer.Options)
		balance int
	}{
		{"MSK and self-managed, the offset key", msk(""), selfManaged(""), nil, 2},
		{"two MSK clusters, the offset key", msk(""), other(""), nil, 2},
		{"two MSK clusters, one header key", msk("evt-1"), other("evt-1"), nil, 2},
		{"shared across clusters", msk(""), selfManaged(""), func(o *kafkaconsumer.Options) { o.SharedAcrossClusters = true }, 1},
	} {
		for _, mode := range modes {
			t.Run(tc.name+"/"+mode.name, func(t *testing.T) {
				e := newEnv(t)
				opt := tc.opt
				if opt == nil {
					opt = func(*kafkaconsumer.Options) {}
				}
				ctx := context.Background()
				want := map[idem.Outcome]int{idem.Processed: 1}
				checkFailed(t, e.run(t, ctx, tc.a, opt, mode.opt))
				checkOutcomes(t, e.seen.take(), want)
				if tc.balance == 1 {
					want = map[idem.Outcome]int{idem.Duplicate: 1}
				}
				checkFailed(t, e.run(t, ctx, tc.b, opt, mode.opt))
				checkOutcomes(t, e.seen.take(), want)
				e.checkBalances(t, map[string]int{"acc-1": tc.balance})
				for _, ev := range []events.KafkaEvent{tc.a, tc.b} { // redelivered
					checkFailed(t, e.run(t, ctx, ev, opt, mode.opt))
					checkOutcomes(t, e.seen.take(), map[idem.Outcome]int{idem.Duplicate: 1})
				}
				e.checkBalances(t, map[string]int{"acc-1": tc.balance})
			})
		}
	}
}

// TestFailedLogNamesKey: a key function that reads the key and then finds
// the value it cannot use fails the record before any claim, and the
// Failed line carries the key it read, as sqsconsumer's does, so that the
// failure can be found in the logs by its key.
func TestFailedLogNamesKey(t *testing.T) {
	e := newEnv(t)
	key := func(rec events.KafkaRecord) (string, error) {
		k, err := kafkaconsumer.HeaderKey(rec)
		if err == nil && rec.Value == "" {
			err = errors.New("a tombstone is no credit")
		}
		return k, err
	}
	rec := idemtest.KafkaRecord("credits", 0, 15, "", map[string]string{kafkaconsumer.KeyHeader: "evt_bad"})
	checkFailed(t, e.run(t, context.Background(), idemtest.KafkaEvent(rec), func(o *kafkaconsumer.Options) { o.Key = key }), "credits-0@15")
	var line map[string]any
	if err := json.Unmarshal(e.logs.Bytes(), &line); err != nil {
		t.Fatalf("%v: %s", err, e.logs.String())
	}
	if line["outcome"] != "Failed" || line["id"] != "evt_bad" || line["partition"] != "credits-0" ||
		!strings.Contains(fmt.Sprint(line["error"]), "a tombstone is no credit") {
		t.Errorf("want the Failed line with id evt_bad, got %s", e.logs.String())
	}
	if n := e.Claims(t); n != 0 {
		t.Errorf("want no claim, got %d", n)
	}
}
