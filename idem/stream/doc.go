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
// A record fails with an error, a panic (its record, not the batch or the
// process) or, for a record after the first, the Lambda deadline within
// Options.DeadlineMargin (idem.ErrDeadline). The first record always
// starts, so a function timeout under the margin cannot stall the shard.
// Kinesis does the same for Kinesis batches; aws-lambda-go's own event and
// response types are used throughout.
//
// # Effects once: Claimed
//
// A record's handler is called at least once: again after a failure of
// its own, and, for records that succeeded, after a whole-invoke failure
// (a timeout, a crash), a bisect on error or a duplicate delivery of the
// stream. Claimed makes a DynamoDB stream record's effect commit once,
// claimed in an idem.Store under the record's eventID, which Lambda's
// retries keep:
//
//	count, err := stream.Claimed(store, func(ctx context.Context, rec events.DynamoDBEventRecord) (idem.Effect, error) {
//		w, err := idem.Update("order-counts", map[string]string{"account": rec.Change.NewImage["account"].String()},
//			expression.Add(expression.Name("orders"), expression.Value(1)))
//		return idem.Effect{Writes: []types.TransactWriteItem{w}}, err
//	})
//	if err != nil {
//		log.Fatal(err)
//	}
//	handle, err := stream.DynamoDB(count)
//
// Two consumers of one stream that share a processed-ids table set
// distinct ClaimedOptions.Source values, or each would take the other's
// claims for its own.
package stream
