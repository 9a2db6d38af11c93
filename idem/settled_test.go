package idem

import (
	"fmt"
	"testing"
	"time"
)

// TestSettledKeys: a key is remembered until its claim expires, and the
// oldest keys leave once settledKeysKept more have come.
func TestSettledKeys(t *testing.T) {
	now := time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)
	k := newSettledKeys()
	rec := func(key string, expires time.Time) Record { return Record{Key: key, ExpiresAt: expires} }
	k.add(rec("a", now.Add(time.Hour)))
	k.add(rec("gone", now.Add(-time.Second)))
	for _, tc := range []struct {
		key  string
		at   time.Time
		want bool
	}{
		{"a", now, true},
		{"a", now.Add(time.Hour), false},
		{"gone", now, false},
		{"never", now, false},
	} {
		if got := k.has(tc.key, tc.at); got != tc.want {
			t.Errorf("%s at %v: want %v, got %v", tc.key, tc.at, tc.want, got)
		}
	}
	for i := range settledKeysKept {
		k.add(rec(fmt.Sprint("k-", i), now.Add(time.Hour)))
	}
	if k.has("a", now) {
		t.Error("a: want it forgotten after settledKeysKept later keys")
	}
	if !k.has("k-0", now) || !k.has(fmt.Sprint("k-", settledKeysKept-1), now) {
		t.Error("want the last settledKeysKept keys remembered")
	}
	if len(k.at) != settledKeysKept || len(k.ring) != settledKeysKept {
		t.Errorf("want %d keys kept, got %d in the map and %d in the ring", settledKeysKept, len(k.at), len(k.ring))
	}
}
