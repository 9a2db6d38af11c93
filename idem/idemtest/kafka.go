package idemtest

import (
	"encoding/base64"
	"maps"
	"slices"
	"strconv"
	"time"

	"github.com/aws/aws-lambda-go/events"
)

// KafkaRecord is a record of topic's partition at offset, as an Amazon MSK
// or self-managed Kafka event source mapping hands it over: value base64
// encoded, and headers (an "idempotency-key", a "traceparent") as bytes,
// one header per name, in name order. For a header given twice, append
// map[string]events.JSONNumberBytes{name: value} to the record's Headers.
func KafkaRecord(topic string, partition, offset int64, value string, headers map[string]string) events.KafkaRecord {
	rec := events.KafkaRecord{
		Topic: topic, Partition: partition, Offset: offset, TimestampType: "CREATE_TIME",
		Timestamp: events.MilliSecondsEpochTime{Time: time.UnixMilli(1767225600000 + offset)},
		Value:     base64.StdEncoding.EncodeToString([]byte(value)), Headers: []map[string]events.JSONNumberBytes{},
	}
	for _, k := range slices.Sorted(maps.Keys(headers)) {
		rec.Headers = append(rec.Headers, map[string]events.JSONNumberBytes{k: events.JSONNumberBytes(headers[k])})
	}
	return rec
}

// KafkaEvent is a batch of recs from an MSK cluster, grouped as Lambda
// groups them: under "<topic>-<partition>", each partition's records in
// the order given (a partition's offsets go up).
func KafkaEvent(recs ...events.KafkaRecord) events.KafkaEvent {
	ev := events.KafkaEvent{
		EventSource:      "aws:kafka",
		EventSourceARN:   "arn:aws:kafka:us-east-1:123456789012:cluster/demo-cluster/751d2973-a626-431c-9d4e-d7975eb44dd7-2",
		BootstrapServers: "b-1.demo-cluster.a1bcde.c2.kafka.us-east-1.amazonaws.com:9092,b-2.demo-cluster.a1bcde.c2.kafka.us-east-1.amazonaws.com:9092",
		Records:          map[string][]events.KafkaRecord{},
	}
	for _, r := range recs {
		k := r.Topic + "-" + strconv.FormatInt(r.Partition, 10)
		ev.Records[k] = append(ev.Records[k], r)
	}
	return ev
}

// kafkaRedelivery is ev as Lambda hands it over again (after a function
// error or timeout): the same records, from each partition's first
// uncommitted offset, with nothing that counts the delivery. Each
// delivery is a copy of its own, as each invoke decodes its own event.
func kafkaRedelivery(ev events.KafkaEvent) events.KafkaEvent {
	recs := make(map[string][]events.KafkaRecord, len(ev.Records))
	for k, rs := range ev.Records {
		rs = slices.Clone(rs)
		for i := range rs {
			hs := make([]map[string]events.JSONNumberBytes, len(rs[i].Headers))
			for j, h := range rs[i].Headers {
				hs[j] = make(map[string]events.JSONNumberBytes, len(h))
				for name, v := range h {
					hs[j][name] = slices.Clone(v)
				}
			}
			rs[i].Headers = hs
		}
		recs[k] = rs
	}
	ev.Records = recs
	return ev
}
