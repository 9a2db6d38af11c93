package main

// The orders in which a stream's deliveries come: each message's first
// delivery in turn, its duplicates after it, messages interleaved.

import (
	"fmt"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"slices"
)

// delivery is one delivery of a stream.
type delivery struct {
	msg     int  // the message's index in its stream
	dup     bool // a duplicate: the message was delivered before
	timed   bool // its message is past the warm-up
	attempt int  // its message's deliveries so far, this one included
}

// stream is an order of deliveries: each message's first delivery in
// turn, each duplicate after its message's first, messages interleaved;
// and how this kit receives them.
type stream struct {
	name, what     string
	order          string  // the name its draws come from: streams of one order share it
	via            via     // how this kit receives the deliveries
	perMessage     float64 // duplicates per message, as designed
	messages, warm int     // timed messages, and the warm-up's before them
	deliveries     []delivery
}

// via is how this kit receives a stream's deliveries.
type via int8

const (
	// viaSQSCounted: the SQS adapter, per record, each record with SQS's
	// ApproximateReceiveCount (Message.Attempt set): a redelivery storm's
	// duplicates are later receives.
	viaSQSCounted via = iota
	// viaSQSUncounted: the SQS adapter with no receive count, every
	// delivery a first receive (Attempt 0): a provider's or a relay's
	// resends.
	viaSQSUncounted
	// viaProcess: Store.Process called directly with no Attempt, as Wrap,
	// a stream's consumer or a direct invoke call it.
	viaProcess
)

// streamWarm is the warm-up's messages, delivered untimed before a
// stream's timed ones, in the same pattern. A Store's share of a sender's
// duplicates (Options.ReadFirstAbove) is a moving average that moves 1/16
// of the way toward each delivery's 0 or 1: 32 messages, 34 deliveries in
// the rarest stream and 96 in the storm, leave it within (15/16)^34, 11%,
// of its start's distance from its settled value (0.006 in the rare
// stream, whose value is 0.05), and within 0.2% in the storm.
const streamWarm = 32

// dupWindow is how far behind its first delivery a duplicate may come: a
// uniform draw of 1 to 1 + dupWindow later messages' first deliveries, so
// that messages interleave as in a redelivery storm.
const dupWindow = 8

// newStream orders warm+n messages' deliveries, named order, for this
// kit's SQS adapter without receive counts: message i is delivered
// first at i, and its duplicates, floor((i+1)·perMessage) −
// floor(i·perMessage) of them (perMessage on average), each at a random
// point within dupWindow messages after it. The draws come from seed and
// the stream's name, so that every strategy, and bench.js, play the same
// order.
func newStream(name, what string, n int, perMessage float64, seed uint64) stream {
	h := fnv.New64a()
	h.Write([]byte(name))
	rng := rand.New(rand.NewPCG(seed, h.Sum64()))
	type slot struct {
		at float64
		d  delivery
	}
	var slots []slot
	dups := func(i int) int {
		const eps = 1e-9 // 19 · (1/19) is 1, not 0.999…
		return int(math.Floor(float64(i+1)*perMessage+eps) - math.Floor(float64(i)*perMessage+eps))
	}
	for i := range streamWarm + n {
		timed := i >= streamWarm
		slots = append(slots, slot{float64(i), delivery{msg: i, timed: timed}})
		for range dups(i) {
			slots = append(slots, slot{float64(i) + 1 + rng.Float64()*dupWindow, delivery{msg: i, dup: true, timed: timed}})
		}
	}
	slices.SortStableFunc(slots, func(a, b slot) int {
		switch {
		case a.at < b.at:
			return -1
		case a.at > b.at:
			return 1
		}
		return 0
	})
	st := stream{name: name, what: what, order: name, via: viaSQSUncounted, perMessage: perMessage, messages: n, warm: streamWarm}
	seen := make([]int, streamWarm+n)
	for _, s := range slots {
		seen[s.d.msg]++
		s.d.attempt = seen[s.d.msg]
		st.deliveries = append(st.deliveries, s.d)
	}
	return st
}

// timed counts a stream's timed first deliveries and duplicates.
func (st stream) timed() (firsts, dups int) {
	for _, d := range st.deliveries {
		switch {
		case !d.timed:
		case d.dup:
			dups++
		default:
			firsts++
		}
	}
	return firsts, dups
}

// The section's streams: duplicates rare; a redelivery storm, counted and
// not; every message twice through Store.Process.
func rareStream(n int, seed uint64) stream {
	st := newStream("rare", "1 message in 19 delivered twice (5% of deliveries are duplicates), the duplicate 1 to 9 messages later, through the SQS adapter with receive counts", n, 1.0/19, seed)
	st.via = viaSQSCounted
	return st
}

// stormStream is an SQS redelivery storm: each message its first receive
// and 2 redeliveries, ApproximateReceiveCount on each record.
func stormStream(n int, seed uint64) stream {
	st := newStream("counted storm", "every message delivered 3 times (1 first receive + 2 redeliveries), its two duplicates each 1 to 9 messages after it, messages interleaved, as an SQS redelivery storm hands them out: through the SQS adapter, each record with its ApproximateReceiveCount (Message.Attempt 1, 2, 3)", n, 2, seed)
	st.via = viaSQSCounted
	return st
}

// uncountedStormStream is the counted storm's order with no receive
// count on any record: a provider's or a relay's resends, every delivery
// a first receive to the kit.
func uncountedStormStream(n int, seed uint64) stream {
	st := stormStream(n, seed)
	st.name, st.via = "uncounted storm", viaSQSUncounted
	st.what = "the counted storm's order and deliveries with no receive count on any record (Message.Attempt 0): a provider's or a relay's resends"
	return st
}

// twiceStream delivers every message twice through Store.Process with no
// Attempt, each duplicate 1 to 9 messages after its first.
func twiceStream(n int, seed uint64) stream {
	st := newStream("twice", "every message delivered twice (50% of deliveries are duplicates), the duplicate 1 to 9 messages later, through `Store.Process` called directly with no `Message.Attempt`", n, 1, seed)
	st.via = viaProcess
	return st
}

// shareStream is a stream in which share of the deliveries are
// duplicates (at most half: each message at most twice).
func shareStream(n int, share float64, seed uint64) stream {
	return newStream(fmt.Sprintf("%.0f%% duplicates", share*100), "", n, share/(1-share), seed)
}
