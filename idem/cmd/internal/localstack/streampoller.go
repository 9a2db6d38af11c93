package localstack

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/aws/aws-sdk-go-v2/service/sqs"
)

// StreamPoller emulates a Lambda event source mapping for a DynamoDB
// stream: it reads each shard in order, drops the records no filter
// matches, invokes the function with batches of the rest, checkpoints
// past what succeeded, retries from the first record that failed (the
// lowest batchItemFailures, or the whole batch on a function error, halved
// with BisectBatchOnFunctionError), and after MaximumRetryAttempts sends an
// on-failure record to the OnFailure queue and moves on. Records arrive at
// least once, in order per shard.
type StreamPoller struct {
	Source StreamEventSource
	// Table is the table whose stream is read.
	Table *Table
	// Endpoint serves DynamoDB Streams: the local DynamoDB's endpoint.
	Endpoint string
	Region   string
	Invoker  Invoker
	// FunctionARN names the function in on-failure records.
	FunctionARN string
	// SQS and OnFailure are the client and the queue on-failure records
	// are sent to; with OnFailure nil they are logged and dropped.
	SQS       *sqs.Client
	OnFailure *Queue
	// RetryLimit stands for MaximumRetryAttempts -1 (retry until the
	// records expire, 24 hours): the local stack gives up after this many
	// retries. Defaults to 10.
	RetryLimit int
	// RetryDelay is the pause before a failed batch is retried; negative
	// is none. Defaults to 200 ms.
	RetryDelay time.Duration
	// PollInterval is the pause after a read that found nothing new; new
	// shards are looked for every four. Defaults to 250 ms: Lambda reads each
	// shard four times a second.
	PollInterval time.Duration
	// Logf receives one line per invoke. Defaults to none.
	Logf func(format string, args ...any)

	invokes, records, filtered, retries, onFailure atomic.Int64
}

// StreamPollerStats count what a stream poller did. Records counts every
// record in every invoke, retries included; Filtered the records no filter
// matched; Retries the invokes that were retries; OnFailure the records
// given up on and sent to the on-failure destination.
type StreamPollerStats struct {
	Invokes, Records, Filtered, Retries, OnFailure int64
}

// Stats returns the poller's counts so far.
func (p *StreamPoller) Stats() StreamPollerStats {
	return StreamPollerStats{p.invokes.Load(), p.records.Load(), p.filtered.Load(), p.retries.Load(), p.onFailure.Load()}
}

// streamRecord is one record as Lambda delivers it, and what the poller
// reads off it.
type streamRecord struct {
	fields  map[string]any
	seq     string
	created time.Time
}

// Run reads the stream until ctx ends, each shard in a goroutine of its
// own that starts when its parent shard is read to its end, then waits for
// the batches in flight to finish.
func (p *StreamPoller) Run(ctx context.Context) {
	api := &streamsAPI{endpoint: p.Endpoint, region: p.Region}
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		started = map[string]bool{}
		done    = map[string]bool{}
		first   = true
	)
	defer wg.Wait()
	for ctx.Err() == nil {
		shards, err := api.shards(ctx, p.Source.StreamARN)
		if err != nil && ctx.Err() == nil {
			p.logf("%s: describe %s: %v", p.Source.Function, p.Source.StreamARN, err)
		}
		known := map[string]bool{}
		for _, sh := range shards {
			known[sh.ShardID] = true
		}
		for _, sh := range shards {
			mu.Lock()
			wait := sh.ParentShardID != "" && known[sh.ParentShardID] && !done[sh.ParentShardID]
			skip := started[sh.ShardID] || wait
			started[sh.ShardID] = started[sh.ShardID] || !wait
			mu.Unlock()
			if skip {
				continue
			}
			// The starting position applies to the shards there are at
			// the start; a later shard is read from its start.
			position := "TRIM_HORIZON"
			if first {
				position = p.Source.StartingPosition
			}
			wg.Go(func() {
				p.readShard(ctx, api, sh.ShardID, position)
				mu.Lock()
				done[sh.ShardID] = true
				mu.Unlock()
			})
		}
		if err == nil {
			first = false
		}
		sleep(ctx, 4*cmp.Or(p.PollInterval, 250*time.Millisecond))
	}
}

// MaxRetries is how many times the poller retries a failed batch:
// MaximumRetryAttempts, or RetryLimit in place of -1.
func (p *StreamPoller) MaxRetries() int {
	switch {
	case p.Source.MaximumRetryAttempts >= 0:
		return p.Source.MaximumRetryAttempts
	case p.RetryLimit > 0:
		return p.RetryLimit
	}
	return 10
}

// readShard reads a shard in order until it is closed and read, or ctx
// ends. What it holds in memory is its checkpoint.
func (p *StreamPoller) readShard(ctx context.Context, api *streamsAPI, shardID, position string) {
	it, err := api.iterator(ctx, p.Source.StreamARN, shardID, position, "")
	for err != nil {
		if ctx.Err() != nil {
			return
		}
		p.logf("%s: shard iterator of %s: %v", p.Source.Function, shardID, err)
		sleep(ctx, time.Second)
		it, err = api.iterator(ctx, p.Source.StreamARN, shardID, position, "")
	}
	var (
		pending  []streamRecord
		lastSeq  string    // of the last record read, to renew an expired iterator
		gathered time.Time // when the first pending record was read
	)
	for ctx.Err() == nil && (it != "" || len(pending) > 0) {
		empty := true
		if it != "" && len(pending) < p.Source.BatchSize {
			raw, next, err := api.records(ctx, it, min(1000, p.Source.BatchSize-len(pending)))
			var se *streamError
			switch {
			case errors.As(err, &se) && se.Type == "ExpiredIteratorException":
				typ := "AFTER_SEQUENCE_NUMBER"
				if lastSeq == "" {
					typ = position
				}
				if next, err = api.iterator(ctx, p.Source.StreamARN, shardID, typ, lastSeq); err != nil {
					next = it
				}
			case err != nil:
				if ctx.Err() == nil {
					p.logf("%s: read %s: %v", p.Source.Function, shardID, err)
				}
				sleep(ctx, time.Second)
				continue
			}
			it = next
			for _, b := range raw {
				empty = false
				rec, err := p.record(b)
				if err != nil {
					p.logf("%s: %s: skipping a record: %v", p.Source.Function, shardID, err)
					continue
				}
				lastSeq = rec.seq
				if !matchAny(p.Source.Filters, rec.fields) {
					p.filtered.Add(1) // checkpointed, never delivered
					continue
				}
				if len(pending) == 0 {
					gathered = time.Now()
				}
				pending = append(pending, rec)
			}
		}
		full := len(pending) >= p.Source.BatchSize
		if len(pending) > 0 && (full || it == "" || time.Since(gathered) >= p.Source.BatchingWindow) {
			n := min(len(pending), p.Source.BatchSize)
			// An invoke runs to its end even when ctx ends meanwhile;
			// the retries after it stop.
			p.deliver(ctx, shardID, pending[:n], 0)
			pending = pending[n:]
			continue
		}
		if empty {
			sleep(ctx, cmp.Or(p.PollInterval, 250*time.Millisecond))
		}
	}
}

func (p *StreamPoller) record(b []byte) (streamRecord, error) {
	v, err := decodeJSON(b)
	m, ok := v.(map[string]any)
	if err != nil || !ok {
		return streamRecord{}, fmt.Errorf("not a JSON object: %.80s", b)
	}
	ddb, _ := m["dynamodb"].(map[string]any)
	rec := streamRecord{fields: m}
	rec.seq, _ = ddb["SequenceNumber"].(string)
	if rec.seq == "" {
		return rec, fmt.Errorf("no dynamodb.SequenceNumber: %.80s", b)
	}
	if secs, ok := toFloat(ddb["ApproximateCreationDateTime"]); ok {
		rec.created = time.UnixMilli(int64(secs * 1000)).UTC()
	}
	m["eventSourceARN"] = p.Source.StreamARN // Lambda adds it
	return rec, nil
}

// deliver invokes the function with a batch until it succeeds, retrying
// from the first record that failed, bisecting a batch the function
// failed when asked to; after the last retry the rest goes to the
// on-failure destination. A bisection does not count as a retry.
func (p *StreamPoller) deliver(ctx context.Context, shardID string, batch []streamRecord, attempts int) {
	maxRetries := p.MaxRetries()
	for len(batch) > 0 {
		if ctx.Err() != nil {
			return // stopped: the records are not checkpointed
		}
		if age := p.Source.MaximumRecordAge; age > 0 {
			old := 0
			for old < len(batch) && !batch[old].created.IsZero() && time.Since(batch[old].created) > age {
				old++
			}
			if old > 0 {
				p.giveUp(ctx, shardID, batch[:old], "RecordAgeExceeded", attempts, "")
				batch = batch[old:]
				continue
			}
		}
		from, err := p.invoke(context.WithoutCancel(ctx), shardID, batch)
		if err == nil && from < 0 {
			return
		}
		if err != nil && p.Source.BisectBatchOnFunctionError && len(batch) > 1 {
			half := len(batch) / 2
			p.logf("%s: bisecting the batch of %d from %s into %d and %d", p.Source.Function, len(batch), shardID, half, len(batch)-half)
			p.deliver(ctx, shardID, batch[:half], attempts)
			p.deliver(ctx, shardID, batch[half:], attempts)
			return
		}
		functionError := ""
		if err != nil {
			functionError = "Unhandled"
			from = 0
		}
		batch = batch[from:] // checkpointed before the lowest failure
		attempts++
		if attempts > maxRetries {
			p.giveUp(ctx, shardID, batch, "RetryAttemptsExhausted", attempts, functionError)
			return
		}
		p.retries.Add(1)
		sleep(ctx, max(cmp.Or(p.RetryDelay, 200*time.Millisecond), 0))
	}
}

// invoke invokes the function with a batch and returns the index of the
// first record to retry, -1 for none, or an error when the function
// failed or answered what Lambda would reject: then the whole batch is to
// retry.
func (p *StreamPoller) invoke(ctx context.Context, shardID string, batch []streamRecord) (int, error) {
	start := time.Now()
	p.invokes.Add(1)
	p.records.Add(int64(len(batch)))
	recs := make([]map[string]any, len(batch))
	for i, r := range batch {
		recs[i] = r.fields
	}
	payload, err := json.Marshal(map[string]any{"Records": recs})
	from := -1
	if err == nil {
		var out []byte
		out, err = p.Invoker.Invoke(ctx, p.Source.Function, payload)
		if err == nil && p.Source.ReportBatchItemFailures {
			from, err = firstFailure(out, batch)
		}
	}
	line := fmt.Sprintf("%s ← %d record(s) from %s %s (%s…%s): ", p.Source.Function, len(batch), p.Table.Name, shardID,
		batch[0].seq, batch[len(batch)-1].seq)
	switch {
	case err != nil:
		line += "to retry: " + err.Error()
	case from >= 0:
		line += fmt.Sprintf("%d done, to retry from %s", from, batch[from].seq)
	default:
		line += "done"
	}
	p.logf("%s (%v)", line, time.Since(start).Round(time.Millisecond))
	return from, err
}

// firstFailure reads a function's partial batch response as Lambda does
// for a stream and returns the index of the record with the lowest
// sequence number reported, -1 for none. An empty or null response, or an
// empty list, is a success; an invalid response, or an itemIdentifier
// that is empty or names no record of the batch, fails the whole batch.
func firstFailure(out []byte, batch []streamRecord) (int, error) {
	if len(out) == 0 || string(out) == "null" {
		return -1, nil
	}
	var resp struct {
		BatchItemFailures []map[string]any `json:"batchItemFailures"`
	}
	if err := json.Unmarshal(out, &resp); err != nil {
		return 0, fmt.Errorf("invalid batch response: %w", err)
	}
	index := map[string]int{}
	for i, r := range batch {
		index[r.seq] = i
	}
	from := -1
	for _, f := range resp.BatchItemFailures {
		id, _ := f["itemIdentifier"].(string)
		i, ok := index[id]
		if !ok {
			return 0, fmt.Errorf("invalid batch response: itemIdentifier %v names no record of the batch", f["itemIdentifier"])
		}
		if from < 0 || i < from {
			from = i
		}
	}
	return from, nil
}

// giveUp sends the on-failure record of records Lambda stops retrying:
// not the records, but where they are in the stream, as Lambda's is.
func (p *StreamPoller) giveUp(ctx context.Context, shardID string, batch []streamRecord, condition string, invokes int, functionError string) {
	p.onFailure.Add(int64(len(batch)))
	first, last := batch[0], batch[len(batch)-1]
	doc := map[string]any{
		"requestContext": map[string]any{
			"requestId":              fmt.Sprintf("local-%d", time.Now().UnixNano()),
			"functionArn":            p.FunctionARN,
			"condition":              condition,
			"approximateInvokeCount": invokes,
		},
		"responseContext": map[string]any{"statusCode": 200, "executedVersion": "$LATEST", "functionError": functionError},
		"version":         "1.0",
		"timestamp":       time.Now().UTC().Format("2006-01-02T15:04:05.000Z"),
		"DDBStreamBatchInfo": map[string]any{
			"shardId":                         shardID,
			"startSequenceNumber":             first.seq,
			"endSequenceNumber":               last.seq,
			"approximateArrivalOfFirstRecord": first.created.Format(time.RFC3339),
			"approximateArrivalOfLastRecord":  last.created.Format(time.RFC3339),
			"batchSize":                       len(batch),
			"streamArn":                       p.Source.StreamARN,
		},
	}
	body, _ := json.Marshal(doc)
	where := "no on-failure destination: dropped"
	if p.OnFailure != nil && p.SQS != nil {
		_, err := p.SQS.SendMessage(context.WithoutCancel(ctx), &sqs.SendMessageInput{QueueUrl: aws.String(p.OnFailure.URL), MessageBody: aws.String(string(body))})
		where = "sent to " + p.OnFailure.Name
		if err != nil {
			where = "not sent to " + p.OnFailure.Name + ": " + err.Error()
		}
	}
	p.logf("%s: gave up on %s record(s) %s…%s of %s (%s): %s", p.Source.Function, strconv.Itoa(len(batch)), first.seq, last.seq, shardID, condition, where)
}

func (p *StreamPoller) logf(format string, args ...any) {
	if p.Logf != nil {
		p.Logf(format, args...)
	}
}

// sleep waits for d or until ctx ends.
func sleep(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}
