// Package kafkaconsumer turns an idem.Store and a record handler into a
// Lambda handler for Kafka batches, from an Amazon MSK or self-managed
// Apache Kafka event source mapping (aws-lambda-go's events.KafkaEvent),
// that applies each record's effect once, keeps each partition's order,
// and reports exactly the records to retry.
//
//	type credit struct {
//		Account string `json:"account"`
//		Cents   int64  `json:"cents"`
//	}
//	store, err := idem.New(dynamodb.NewFromConfig(cfg), "processed-ids")
//	…
//	h, err := kafkaconsumer.New(store, kafkaconsumer.JSONHandler(func(ctx context.Context, c credit, rec events.KafkaRecord) (idem.Effect, error) {
//		w, err := idem.Update("accounts", map[string]string{"account": c.Account},
//			expression.Add(expression.Name("balance"), expression.Value(c.Cents)))
//		return idem.Effect{Writes: []types.TransactWriteItem{w}}, err
//	}))
//	if err != nil {
//		log.Fatal(err)
//	}
//	lambda.Start(h)
//
// The event source mapping (provisioned mode) must set
// FunctionResponseTypes to ReportBatchItemFailures: the handler answers
// with a Response naming the failed records and never with a function
// error, which would retry the whole batch,
//
//	{"batchItemFailures": [{"itemIdentifier": {"partition": "credits-0", "offset": 15}}]}
//
// where partition is the key of the event's records map the record came
// under ("<topic>-<partition>") and offset its offset. aws-lambda-go has
// no type for this answer: Response is its shape.
//
// # Order
//
// Lambda delivers each partition's records in order, at least once. Each
// record is one idem.Store.Process call: its claim and its effect commit
// in one transaction, so a record delivered again, in this batch or a
// later one, applies one effect. A partition's records run one after
// another; partitions run concurrently, up to Options.Concurrency. After a
// partition's first failure its later records are reported failed without
// being processed, and Lambda retries the partition from the first; other
// partitions go on. Options.BatchTransactions commits a record of each
// partition per idem.Store.ProcessBatch call (fewer calls for a batch of
// many partitions, none fewer for one), since two records of one partition
// in one call would run the later handler before the earlier effect.
//
// # Keys
//
// A record's key is, by default (DefaultKey), the first of:
//
//  1. the record header idempotency-key (KeyHeader), UTF-8 text neither
//     empty nor only white space, set by the producer: the one key that survives the producer
//     publishing the message again;
//  2. the record's place, topic, partition and offset (OffsetKey,
//     "credits/0/15"), which Lambda's redeliveries keep. A message the
//     producer publishes again gets a new offset, and a topic deleted and
//     created again numbers its offsets from 0 anew, so a new record at an
//     old place, within the claims' retention, is taken for the old one
//     (its effect skipped as a Duplicate, or failed as a key reused with
//     another payload). A record of the same topic name in another
//     cluster is kept apart by the scope (below).
//
// A header that is present but empty, not UTF-8, or given twice with two
// values fails its record rather than fall back to the offset; so does a
// value that is not base64 or a key over DynamoDB's limit, with a clear
// error, and nothing committed. The record's Kafka key is its
// partitioning key (an account, an order), shared by many messages, never
// its idempotency key. Keys are scoped by the record's topic and cluster:
// the default Source (also the metrics') is the topic and the event's
// ClusterTag, "credits@eb841f791d20", a short hash of the MSK cluster's
// ARN (eventSourceArn) or of a self-managed cluster's bootstrapServers,
// as two topics, or one topic name in two clusters (two event source
// mappings on one function), may reuse one id, or one partition and
// offset, for two messages. Options.Source (one scope for all),
// Options.SharedAcrossClusters (the topic alone, the scope before this
// release) or the Store's Scope say otherwise. Header values
// reach the handler as aws-lambda-go decodes them (events.JSONNumberBytes:
// JSON numbers from -128 to 127); an event with another value fails to
// decode before the handler runs, which Lambda never sends.
//
// Options are the options every batch consumer takes (idem/batch's
// Options, each default on its field, embedded) and SharedAcrossClusters.
// Two defaults are this package's own: Options.Key defaults to
// DefaultKey, and Options.Source to the record's topic and its cluster's
// ClusterTag, "credits@eb841f791d20" (Keys, above).
//
// Kafka keeps no delivery count: each message's idem.Message.Attempt is 0,
// and a redelivery is the same records again, from the partition's first
// uncommitted offset. The message's Payload is the record's value.
//
// Successes: Processed, Duplicate, and a rejection the effect recorded
// (idem.Rejected). Every other outcome fails its record and the rest of its
// partition, as in idem/sqsconsumer: a key or value that is missing or
// unreadable, a handler error or panic (an *idem.PanicError: that record
// fails, never the process), a key reused with another payload, a DynamoDB
// error, a record not started within Options.DeadlineMargin of the Lambda
// deadline (idem.ErrDeadline). Each record is logged, with its partition
// and offset, and counted once, by the Store. Lambda retries a failed
// record as its retry configuration says (by default until it expires),
// and can send it to an on-failure destination.
//
// Lambda's guides: Kafka error handling and partial batch responses,
// https://docs.aws.amazon.com/lambda/latest/dg/kafka-retry-configurations.html;
// the event, https://docs.aws.amazon.com/lambda/latest/dg/with-msk.html.
package kafkaconsumer
