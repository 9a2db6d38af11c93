// Package stream consumes DynamoDB Streams and Kinesis batches the way
// Lambda checkpoints them: records in order, and, with the event source
// mapping's FunctionResponseTypes set to ReportBatchItemFailures, the
// first record that failed reported by its sequence number, so that Lambda
// checkpoints the records before it and retries from it. The records after
// the first failure are not run: they come back with it, in order.
//
//	handle, err := stream.DynamoDB(func(ctx context.Context, rec events.DynamoDBEventRecord) error {
//		return publish(ctx, rec.Change.NewImage)
//	})
//	if err != nil {
//		log.Fatal(err)
//	}
//	lambda.Start(handle)
//
// A record's handler is called at least once: again after a failure of
// its own, and, for records that succeeded, after a whole-invoke failure
// (a timeout, a crash), a bisect on error or a duplicate delivery of the
// stream. Claimed makes a DynamoDB stream record's effect commit once,
// claimed in an idem.Store under the record's eventID, which Lambda's
// retries keep. A panic in a handler fails its record, not the batch or
// the process. aws-lambda-go's own event and response types are used
// throughout.
package stream
