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
// turn, each duplicate after its message's first, messages interleaved.
type stream struct {
	name, what     string
	perMessage     float64 // duplicates per message, as designed
	messages, warm int     // timed messages, and the warm-up's before them
	deliveries     []delivery
}

// streamWarm is the warm-up's messages, delivered untimed before a
// stream's timed ones, in the same pattern. A Store's share of a sender's
// duplicates (Options.ReadFirstAbove) is a moving average that moves 1/16
// of the way toward each delivery's 0 or 1: 32 messages, 34 deliveries in
// the rarest stream and 96 in the storm, leave it within (15/16)^34, 11%,
// of its start's distance from its settled value (0.006 in the rare
// stream, whose value is 0.05), and within 0.2% in the storm. Records
// with receive counts keep first attempts and redeliveries apart: the
// first attempts' share settles as above, but the rare stream's warm-up
// holds about 2 redeliveries where 6 lift theirs past ReadFirstAbove, so
// some of its timed duplicates still pay a transaction (the report says
// so).
const streamWarm = 32

// dupWindow is how far behind its first delivery a duplicate may come: a
// uniform draw of 1 to 1 + dupWindow later messages' first deliveries, so
// that messages interleave as in a redelivery storm.
const dupWindow = 8

// newStream orders warm+n messages' deliveries: message i is delivered
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
	st := stream{name: name, what: what, perMessage: perMessage, messages: n, warm: streamWarm}
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

// The section's two streams: duplicates rare, and a redelivery storm.
func rareStream(n int, seed uint64) stream {
	return newStream("rare", "1 message in 19 delivered twice (5% of deliveries are duplicates), the duplicate 1 to 9 messages later", n, 1.0/19, seed)
}

func stormStream(n int, seed uint64) stream {
	return newStream("storm", "every message delivered 3 times, its two duplicates each 1 to 9 messages after it, messages interleaved, as an SQS redelivery storm hands them out", n, 2, seed)
}

// shareStream is a stream in which share of the deliveries are
// duplicates (at most half: each message at most twice).
func shareStream(n int, share float64, seed uint64) stream {
	return newStream(fmt.Sprintf("%.0f%% duplicates", share*100), "", n, share/(1-share), seed)
}
