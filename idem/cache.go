package idem

import (
	"container/list"
	"slices"
	"sync"
	"time"
)

// cache holds the claim records a Store has seen committed, most recently
// used first, at most size of them, so that a duplicate in a warm
// environment is answered without a call. A record is used only while its
// claim holds (before ExpiresAt): after that a delivery is a first one
// again, which only DynamoDB can decide.
type cache struct {
	mu    sync.Mutex
	size  int
	order *list.List               // of *Record, front most recent
	byKey map[string]*list.Element // claim key → its element
}

func newCache(size int) *cache {
	if size <= 0 {
		return nil
	}
	return &cache{size: size, order: list.New(), byKey: make(map[string]*list.Element, size)}
}

// get returns key's committed record, if it is cached and unexpired at
// now; its Response is the cache's, which nobody may change.
func (c *cache) get(key string, now time.Time) (Record, bool) {
	if c == nil {
		return Record{}, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.byKey[key]
	if !ok {
		return Record{}, false
	}
	rec := el.Value.(*Record)
	if !now.Before(rec.ExpiresAt) {
		c.order.Remove(el)
		delete(c.byKey, key)
		return Record{}, false
	}
	c.order.MoveToFront(el)
	return *rec, true // its Response is shared: answerKnown copies it
}

// put remembers a record DynamoDB holds: one just committed, or the one a
// cancelled claim returned.
func (c *cache) put(rec Record) {
	if c == nil || rec.Key == "" || rec.ExpiresAt.IsZero() {
		return
	}
	rec.Response = slices.Clone(rec.Response) // not the caller's buffer
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.byKey[rec.Key]; ok {
		*el.Value.(*Record) = rec
		c.order.MoveToFront(el)
		return
	}
	c.byKey[rec.Key] = c.order.PushFront(&rec)
	if c.order.Len() > c.size {
		last := c.order.Back()
		c.order.Remove(last)
		delete(c.byKey, last.Value.(*Record).Key)
	}
}

// cacheSettled remembers the claim a delivery committed, or found, when
// its outcome tells it (settledClaim): its key among the keys settled
// here (readfirst.go), and the claim in the cache, if there is one.
func (s *Store) cacheSettled(res Result, err error) {
	if rec, ok := settledClaim(res, err); ok {
		s.settled.add(rec)
		s.cache.put(rec)
	}
}
