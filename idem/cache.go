package idem

import (
	"container/list"
	"hash/maphash"
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

// remember keeps the claim a delivery committed, or found, when its
// outcome tells it (claimOf): its key among the keys settled here, and the
// claim in the cache, if there is one.
func (s *Store) remember(res Result, err error) {
	if rec, ok := claimOf(res, err); ok {
		s.settled.add(rec)
		s.cache.put(rec)
	}
}

// settledKeys remembers, as hashes, the last keys whose claims this Store
// saw settled (committed, or found committed), each until its claim
// expires, so that a redelivery to the same environment reads its claim
// instead of paying a cancelled transaction. Only the way is chosen from
// it: DynamoDB's answer decides, so a hash that collides, or a claim
// deleted since, costs at most a read.
type settledKeys struct {
	mu   sync.Mutex
	seed maphash.Seed
	at   map[uint64]int // hash → its place in ring
	ring []settledKey
	next int
}

type settledKey struct {
	hash    uint64
	expires int64 // the claim's ExpiresAt, epoch seconds
}

// settledKeysKept is how many keys a Store remembers: about 130 KB, and
// several minutes of a busy sender's messages.
const settledKeysKept = 4096

func newSettledKeys() *settledKeys {
	return &settledKeys{seed: maphash.MakeSeed(), at: make(map[uint64]int, settledKeysKept), ring: make([]settledKey, 0, settledKeysKept)}
}

// has says whether key's claim was seen settled here and is unexpired at
// now.
func (k *settledKeys) has(key string, now time.Time) bool {
	h := maphash.String(k.seed, key)
	k.mu.Lock()
	defer k.mu.Unlock()
	i, ok := k.at[h]
	return ok && now.Unix() < k.ring[i].expires
}

// add remembers rec's key until rec expires.
func (k *settledKeys) add(rec Record) {
	e := settledKey{maphash.String(k.seed, rec.Key), rec.ExpiresAt.Unix()}
	k.mu.Lock()
	defer k.mu.Unlock()
	if i, ok := k.at[e.hash]; ok {
		k.ring[i] = e
		return
	}
	if len(k.ring) < settledKeysKept {
		k.at[e.hash] = len(k.ring)
		k.ring = append(k.ring, e)
		return
	}
	if old := k.ring[k.next].hash; k.at[old] == k.next {
		delete(k.at, old)
	}
	k.ring[k.next], k.at[e.hash] = e, k.next
	k.next = (k.next + 1) % settledKeysKept
}
