package idem

import (
	"context"
	"slices"
	"strings"
	"sync"
	"time"
)

// DynamoDB cancels a transaction that meets an item another transaction
// is writing (FACTS: transaction conflicts), however the two were sent.
// Deliveries of one process whose effects write one item (a batch's
// records crediting one account, Lambda Managed Instances' concurrent
// invokes, a Kafka batch's partitions) would cancel one another for
// nothing: each of this Store's transactions holds, while it is sent,
// the items its effect writes, and another transaction of the Store on
// one of them waits its turn here instead.

// itemLocks are the items this Store's transactions are writing.
type itemLocks struct {
	mu   sync.Mutex
	held map[target]*itemLock
}

// itemLock is one item's turn: a transaction holds it while it is sent;
// users counts those holding it or waiting, so that the last one removes
// it.
type itemLock struct {
	turn  chan struct{} // holds a token while taken
	users int
}

// lock takes the items ts (sorted in place), in one order (so that two transactions never
// wait on each other), waiting while another transaction of the Store
// holds one, until ctx ends or until; unlock gives them back. An error is
// ctx's or context.DeadlineExceeded, nothing held.
func (l *itemLocks) lock(ctx context.Context, ts []target, until time.Time) (unlock func(), err error) {
	if len(ts) == 0 {
		return func() {}, nil
	}
	slices.SortFunc(ts, func(a, b target) int {
		if c := strings.Compare(a.table, b.table); c != 0 {
			return c
		}
		return strings.Compare(a.key, b.key)
	})
	ts = slices.Compact(ts)
	l.mu.Lock()
	if l.held == nil {
		l.held = map[target]*itemLock{}
	}
	locks := make([]*itemLock, len(ts))
	for i, t := range ts {
		il := l.held[t]
		if il == nil {
			il = &itemLock{turn: make(chan struct{}, 1)}
			l.held[t] = il
		}
		il.users++
		locks[i] = il
	}
	l.mu.Unlock()
	taken := 0
	release := func() {
		for _, il := range locks[:taken] {
			<-il.turn
		}
		l.mu.Lock()
		for i, il := range locks {
			if il.users--; il.users == 0 {
				delete(l.held, ts[i])
			}
		}
		l.mu.Unlock()
	}
	var expired <-chan time.Time // made once a wait begins: most locks are free
	for _, il := range locks {
		select {
		case il.turn <- struct{}{}: // free: taken, whatever ctx says
			taken++
			continue
		default:
		}
		if expired == nil {
			t := time.NewTimer(time.Until(until))
			defer t.Stop()
			expired = t.C
		}
		select {
		case il.turn <- struct{}{}:
			taken++
		case <-ctx.Done():
			release()
			return nil, ctx.Err()
		case <-expired:
			release()
			return nil, context.DeadlineExceeded
		}
	}
	return release, nil
}
