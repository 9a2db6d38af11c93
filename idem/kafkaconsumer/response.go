package kafkaconsumer

// aws-lambda-go (v1.55.1) has no response type for Kafka batches, and the
// Kafka mapping names a record by two values, where SQS's
// events.SQSBatchItemFailure holds one string: these are the smallest
// types of the documented shape,
//
//	{"batchItemFailures": [{"itemIdentifier": {"partition": "credits-0", "offset": 15}}]}

// Response is the answer Lambda's Kafka event source mapping reads when its
// FunctionResponseTypes include ReportBatchItemFailures: the records to
// retry. An empty list commits the whole batch.
type Response struct {
	BatchItemFailures []BatchItemFailure `json:"batchItemFailures"`
}

// BatchItemFailure names one record to retry.
type BatchItemFailure struct {
	ItemIdentifier ItemIdentifier `json:"itemIdentifier"`
}

// ItemIdentifier names a record of a Kafka batch: its partition, as the key
// of the event's records map names it ("<topic>-<partition>"), and its
// offset.
type ItemIdentifier struct {
	Partition string `json:"partition"`
	Offset    int64  `json:"offset"`
}
