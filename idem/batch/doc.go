// Package batch is what the batch consumers share, idem/sqsconsumer and
// idem/kafkaconsumer: their options, defaults and key helpers, generic
// over the record type a consumer reads (events.SQSMessage,
// events.KafkaRecord).
//
// A consumer's Options is an Options of its record, or holds one:
// sqsconsumer.Options is Options[events.SQSMessage], and
// kafkaconsumer.Options embeds Options[events.KafkaRecord] beside options
// of its own. Set them as any Options are set, in New's optFns:
//
//	h, err := sqsconsumer.New(store, handler, func(o *sqsconsumer.Options) {
//		o.BatchTransactions = true
//	})
//
// Each default is written once, on its field. Key and Source default to
// the consumer's own, which its package doc names: a consumer knows where
// its records carry a key and name their sender.
//
// A batch's records run in lanes: a lane's records one after another, in
// order, none after the first that failed, so that the source redelivers
// the lane from that record on. A lane is an SQS FIFO queue's message
// group, a Kafka partition, or a standard queue's record alone.
package batch
