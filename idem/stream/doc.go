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
//
// # Hot aggregates: Aggregate
//
// One item takes one transaction at a time: DynamoDB cancels a
// transaction that meets an item another is writing, so many messages
// crediting one account (a big merchant's balance, a daily total) cancel
// one another. For an item that hot, each message commits an entry of its
// own with its claim (never contended), and Aggregate, on the entries
// table's stream, brings the aggregate up to date: each record claimed
// once, the batch's increments of one item summed into one action, up to
// 99 records a transaction. The aggregate lags the entries by the stream's
// delay (the event source mapping's polling and batching window: about a
// second, more under a batching window); readers that need the exact
// figure at once add the entries not yet folded. The guide beside idem
// (GUIDE.md, hot items) has the measured figures of each way.
//
//	fold, err := stream.Aggregate(store, func(ctx context.Context, rec events.DynamoDBEventRecord) (idem.Effect, error) {
//		cents, err := strconv.Atoi(rec.Change.NewImage["cents"].Number())
//		if err != nil {
//			return idem.Effect{}, err
//		}
//		w, err := idem.Update("accounts", map[string]string{"account": rec.Change.NewImage["account"].String()},
//			expression.Add(expression.Name("balance"), expression.Value(cents)))
//		return idem.Effect{Writes: []types.TransactWriteItem{w}}, err
//	})
//	if err != nil {
//		log.Fatal(err)
//	}
//	lambda.Start(fold)
package stream
