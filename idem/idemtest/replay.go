package idemtest

import (
	"context"
	"sync"

	"github.com/idemkit/kit/idem"
)

// Delivery delivers a message once, as a test's adapter would.
type Delivery func(ctx context.Context) (idem.Result, error)

// ReplayReport counts what the deliveries of one message came to.
type ReplayReport struct {
	Processed  int
	Duplicates int
	Rejected   int
	// Errors are the deliveries that failed, in no particular order.
	Errors []error
	// Results are the successful deliveries' results, in no particular order.
	Results []idem.Result
}

func (r *ReplayReport) add(res idem.Result, err error) {
	if err != nil {
		r.Errors = append(r.Errors, err)
		return
	}
	r.Results = append(r.Results, res)
	switch res.Outcome {
	case idem.Processed:
		r.Processed++
	case idem.Duplicate:
		r.Duplicates++
	case idem.Rejected:
		r.Rejected++
	}
}

// Replay delivers the message n times, one after another.
func Replay(ctx context.Context, n int, deliver Delivery) ReplayReport {
	var r ReplayReport
	for range n {
		r.add(deliver(ctx))
	}
	return r
}

// ReplayConcurrently delivers the message n times at once: n goroutines
// released together.
func ReplayConcurrently(ctx context.Context, n int, deliver Delivery) ReplayReport {
	var (
		r     ReplayReport
		mu    sync.Mutex
		wg    sync.WaitGroup
		start = make(chan struct{})
	)
	for range n {
		wg.Go(func() {
			<-start
			res, err := deliver(ctx)
			mu.Lock()
			r.add(res, err)
			mu.Unlock()
		})
	}
	close(start)
	wg.Wait()
	return r
}
