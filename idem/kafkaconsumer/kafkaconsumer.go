package kafkaconsumer

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"

	"github.com/aws/aws-lambda-go/events"

	"github.com/idemkit/kit/idem"
	"github.com/idemkit/kit/idem/batch"
	"github.com/idemkit/kit/idem/internal/adapt"
)

// Handler reads one record and describes its effect, as an idem.Handler
// does; idem.FromContext gives the message the kit built from it, whose
// Payload is the record's value, decoded from base64.
type Handler func(ctx context.Context, rec events.KafkaRecord) (idem.Effect, error)

// BatchHandler is the handler New returns, for lambda.Start: a function of
// aws-lambda-go's Kafka event and the partial batch response, named so
// that a wrapper can say what it takes and gives (sqsconsumer.BatchHandler
// shows one).
type BatchHandler func(ctx context.Context, ev events.KafkaEvent) (Response, error)

// errPartitionStopped reports a record not processed because an earlier
// record of its partition failed: it must wait, to keep the partition's
// order. A record not started for the deadline is idem.ErrDeadline.
var errPartitionStopped = errors.New("kafkaconsumer: not started: an earlier record of its partition failed")

// Options configure the batch handler New returns: the options the batch
// consumers share, each default on its field (idem/batch), Key's and
// Source's this package's own (the package doc), and the Kafka
// consumer's own option.
type Options struct {
	batch.Options[events.KafkaRecord]

	// SharedAcrossClusters leaves the cluster out of the default Source:
	// the topic alone ("credits"), the scope before this release, so that
	// a consumer deployed with it keeps finding the claims it stored
	// while records committed before the upgrade may still be delivered
	// again (a migration window: at most the claims' retention); or so
	// that a topic mirrored into a second cluster under the producer's
	// idempotency-key header is applied once across both. Two clusters'
	// records at one topic, partition and offset then share a key, the
	// second skipped as a Duplicate or failed as a key reused. Unused when
	// Source is set. Defaults to false: the cluster in the scope.
	SharedAcrossClusters bool
}

// consumer is the batch handler New returns.
type consumer struct {
	lanes *adapt.LaneRunner[record, events.KafkaRecord]
	opts  Options
}

// New returns a handler for lambda.Start that processes a Kafka batch (an
// Amazon MSK or self-managed Apache Kafka event source mapping's) through
// store, each record in its own claim and effect transaction, and reports
// the records to retry. The event source mapping must set
// FunctionResponseTypes to ReportBatchItemFailures. New refuses a nil store
// or h, an Options.Source that store cannot take as a message's Source,
// and lease options it cannot honour.
func New(store *idem.Store, h Handler, optFns ...func(*Options)) (BatchHandler, error) {
	var o Options
	for _, fn := range optFns {
		fn(&o)
	}
	c := &consumer{opts: o}
	lanes, err := adapt.NewLaneRunner(store, "kafkaconsumer", o.Options, adapt.Records[record, events.KafkaRecord]{
		Handle:     h,
		Record:     func(r record) events.KafkaRecord { return r.rec },
		Message:    c.message,
		DefaultKey: DefaultKey,
		NoKey:      ErrNoKey,
		NoSource:   errors.New("the record names no topic and Options.Source is unset"),
		Name:       record.String,
		Stopped:    stopped,
		Span:       span,
	})
	if err != nil {
		return nil, err
	}
	c.lanes = lanes
	return c.handle, nil
}

// record is a record of the batch with the key of the event's records map
// it came under, which the response names it by.
type record struct {
	tp      string // "<topic>-<partition>", as Lambda writes it
	cluster string // the event's ClusterTag
	rec     events.KafkaRecord
}

func (r record) String() string { return r.tp + "@" + strconv.FormatInt(r.rec.Offset, 10) }

// flatten lists the batch's records partition by partition, in the order
// of the partitions' keys, each partition's records in the order Lambda
// gave them (its offsets'), and returns each partition's indexes as a lane.
func flatten(ev events.KafkaEvent) ([]record, [][]int) {
	keys := make([]string, 0, len(ev.Records))
	n := 0
	for k, rs := range ev.Records {
		keys = append(keys, k)
		n += len(rs)
	}
	slices.Sort(keys)
	cluster := ClusterTag(ev)
	recs, lanes := make([]record, 0, n), make([][]int, 0, len(keys))
	for _, k := range keys {
		var lane []int
		for _, r := range ev.Records[k] {
			lane = append(lane, len(recs))
			recs = append(recs, record{k, cluster, r})
		}
		if len(lane) > 0 {
			lanes = append(lanes, lane)
		}
	}
	return recs, lanes
}

// handle never returns an error: a function error would retry every
// record, including the ones whose effects just committed.
func (c *consumer) handle(ctx context.Context, ev events.KafkaEvent) (Response, error) {
	recs, lanes := flatten(ev)
	errs := c.lanes.Run(ctx, recs, lanes)
	return Response{BatchItemFailures: adapt.Failed(errs, func(i int) BatchItemFailure {
		return BatchItemFailure{ItemIdentifier{Partition: recs[i].tp, Offset: recs[i].rec.Offset}}
	})}, nil
}

// stopped says why a record waits: after, an earlier record of its
// partition, failed; Lambda retries the partition from after.
func stopped(_, after record) error {
	return fmt.Errorf("%w (after offset %d)", errPartitionStopped, after.rec.Offset)
}

// message is the record as the Store takes it: its value, decoded, is the
// payload, its Source the topic and the cluster (Options.Source), and the
// partition and offset in its log line are what the batch response
// names. Kafka keeps no delivery count: Attempt is 0.
func (c *consumer) message(r record) (idem.Message, error) {
	src := c.opts.Source
	if src == "" {
		src = r.rec.Topic
		if src != "" && r.cluster != "" && !c.opts.SharedAcrossClusters {
			src += "@" + r.cluster
		}
	}
	msg := idem.Message{Source: src, LogAttrs: []slog.Attr{slog.String("partition", r.tp), slog.Int64("offset", r.rec.Offset)}}
	v, err := base64.StdEncoding.DecodeString(r.rec.Value)
	if err != nil {
		// Lambda encodes every value: only a direct invoke gets here.
		return msg, fmt.Errorf("the value is not base64: %w", err)
	}
	msg.Payload = v
	return msg, nil
}
