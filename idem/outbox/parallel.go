package outbox

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
)

// chunkState is a chunk's state in sendChunks.
type chunkState int

const (
	waiting chunkState = iota
	inFlight
	sent
	notSent // failed, or not started inside the deadline margin
)

// result is one finished send: chunk c's items before k were sent; err, if
// not nil, is why item k was not.
type result struct {
	c, k int
	err  error
}

// sendChunks sends chunks, up to Options.Concurrency at once, and returns
// the first record, in stream order, of an item not sent (every record
// before it was sent) with its error; err is nil when all were sent.
//
// A chunk starts once every chunk it waits for (chunk.after: the FIFO
// groups it shares) was sent, so a group's calls never overlap and a
// group's later items never go out after its earlier ones failed. No chunk
// starts after a failure known before it, since Lambda sends it again from
// that record anyway; chunks already in flight finish, and may send records
// after the answer, which the retry sends again (at least once). Each chunk
// is decided by the one goroutine running this loop; the sends' goroutines
// only report on results.
func (r *Relay) sendChunks(ctx context.Context, chunks []chunk) (failed int, err error) {
	if len(chunks) == 0 {
		return -1, nil
	}
	state := make([]chunkState, len(chunks))
	failed = -1
	fail := func(i int, e error) {
		if failed < 0 || i < failed {
			failed, err = i, e
		}
	}
	defer func() {
		if v := recover(); v != nil {
			// A bug of this loop: fail at the first chunk not known to be
			// sent, as any failure does, rather than crash the invoke.
			c := 0
			for c < len(chunks)-1 && state[c] == sent {
				c++
			}
			failed, err = chunks[c].recs[0], &badItemError{fmt.Errorf("outbox: the relay panicked sending this record or a later one: %v\n%s", v, debug.Stack())}
		}
	}()
	// Buffered for every chunk: a send never blocks on its report, even
	// once this loop has returned.
	results := make(chan result, len(chunks))
	running, anySent, lo := 0, false, 0
	for {
		for lo < len(chunks) && state[lo] != waiting {
			lo++
		}
		for c := lo; c < len(chunks) && running < r.o.Concurrency; c++ {
			if failed >= 0 && chunks[c].recs[0] > failed {
				break // this one and all after: the retry sends them
			}
			if state[c] != waiting || !r.ready(chunks[c], state) {
				continue
			}
			// Inside the margin, only a batch's first send may start: the
			// concurrent first wave starts outside it, or as one send.
			if e := r.nearDeadline(ctx, anySent || running > 0); e != nil {
				state[c] = notSent
				fail(chunks[c].recs[0], e)
				continue
			}
			state[c], running = inFlight, running+1
			go r.sendChunk(ctx, c, chunks[c].items, results)
		}
		if running == 0 {
			break
		}
		res := <-results
		running--
		if res.err != nil {
			state[res.c] = notSent
			fail(chunks[res.c].recs[res.k], res.err)
		} else {
			state[res.c], anySent = sent, true
		}
	}
	// Every chunk before the answer was sent or failed itself: one waiting
	// there would mean a group waits on a chunk after it, which readChunks
	// never writes. Should it, the answer moves to it rather than past it.
	for c := range chunks {
		if state[c] == waiting && (failed < 0 || chunks[c].recs[0] < failed) {
			fail(chunks[c].recs[0], errors.New("outbox: not sent: a send it waited for was not made"))
			break
		}
	}
	return failed, err
}

// ready says whether every chunk c waits for was sent. One that failed
// leaves c waiting, after that failure, so never sent in this invoke.
func (r *Relay) ready(c chunk, state []chunkState) bool {
	for _, d := range c.after {
		if state[d] != sent {
			return false
		}
	}
	return true
}

// sendChunk sends chunk c's items and reports on out. A panic, in the
// client or the relay, fails the chunk at its first item instead of
// crashing the invoke, which would have the whole batch sent again.
func (r *Relay) sendChunk(ctx context.Context, c int, items []item, out chan<- result) {
	res := result{c: c}
	defer func() {
		if v := recover(); v != nil {
			res.k, res.err = 0, &badItemError{fmt.Errorf("outbox: sending %s panicked: %v\n%s", items[0].itemID, v, debug.Stack())}
		}
		if res.err != nil && (res.k < 0 || res.k >= len(items)) {
			res.k = 0
		}
		out <- res
	}()
	cctx, cancel := r.callContext(ctx)
	defer cancel()
	res.k, res.err = r.send(cctx, items)
}
