package webhook

import (
	"context"
	"testing"
	"time"
)

// TestInFlightWait: Options.InFlightWait, cut a second before API
// Gateway's 29 s counted from the request's start and a second before the
// context's deadline, never below 0.
func TestInFlightWait(t *testing.T) {
	for _, tc := range []struct {
		name     string
		wait     time.Duration
		startAgo time.Duration // < 0: a start ahead of this clock
		deadline time.Duration // 0: none
		want     time.Duration
	}{
		{"no wait", 0, 0, 0, 0},
		{"the wait", 5 * time.Second, 0, 0, 5 * time.Second},
		{"API Gateway's limit", 60 * time.Second, 0, 0, 28 * time.Second},
		{"started 20 s ago", 20 * time.Second, 20 * time.Second, 0, 8 * time.Second},
		{"started 29 s ago", 20 * time.Second, 29 * time.Second, 0, 0},
		{"a start ahead of this clock", 60 * time.Second, -10 * time.Second, 0, 28 * time.Second},
		{"the deadline", 20 * time.Second, 0, 3 * time.Second, 2 * time.Second},
		{"the deadline within the margin", 20 * time.Second, 0, 500 * time.Millisecond, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &Receiver{opts: Options{InFlightWait: tc.wait}}
			ctx := context.Background()
			if tc.deadline > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, tc.deadline)
				defer cancel()
			}
			got := r.inFlightWait(ctx, time.Now().Add(-tc.startAgo))
			if got > tc.want || got < tc.want-100*time.Millisecond { // the clock moves between the two reads
				t.Errorf("want %v, got %v", tc.want, got)
			}
		})
	}
}
