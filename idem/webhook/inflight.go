package webhook

import (
	"context"
	"time"
)

const (
	// apiGatewayLimit is API Gateway's integration timeout: past it, API
	// Gateway answers the caller 504 itself, and the caller retries blind.
	apiGatewayLimit = 29 * time.Second
	// answerMargin is kept between the end of a wait and the limit or the
	// deadline it is cut to: time to send the 409 back.
	answerMargin = time.Second
)

// inFlightWait is how long a delivery may wait for another delivery of its
// key running in this process (seam.WithWait): Options.InFlightWait, cut
// to end answerMargin before API Gateway's limit, counted from start, and
// before ctx's deadline. It reads the wall clock, not the Store's: the wait
// is a timer, and the deadline and API Gateway's epoch are wall-clock times.
func (r *Receiver) inFlightWait(ctx context.Context, start time.Time) time.Duration {
	d := r.opts.InFlightWait
	if d <= 0 {
		return 0
	}
	now := time.Now()
	if start.IsZero() || start.After(now) { // an epoch ahead of this clock counts from now
		start = now
	}
	d = min(d, start.Add(apiGatewayLimit-answerMargin).Sub(now))
	if deadline, ok := ctx.Deadline(); ok {
		d = min(d, deadline.Add(-answerMargin).Sub(now))
	}
	return max(d, 0)
}

// epochStart is the start of a request API Gateway stamped in epoch
// milliseconds, or now for an event without one.
func epochStart(ms int64) time.Time {
	if ms <= 0 {
		return time.Now()
	}
	return time.UnixMilli(ms)
}
