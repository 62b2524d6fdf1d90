package org

import (
	"sync"
	"time"
)

// DefaultKeyCacheTTL is how long a [Store] reuses what it read of an API key
// (its organisation, type, expiry and revocation) and of an organisation
// (its plan and limit) before it reads them again: see [WithKeyCacheTTL].
const DefaultKeyCacheTTL = 5 * time.Second

// maxCached bounds the entries of each of a Store's caches (keys by secret
// digest, organisations by id): about 200 bytes each, so at most a few MiB.
// A cache that is full is emptied before the next entry is added; the
// requests after that read the database again, as without a cache.
const maxCached = 10_000

// ttlCache keeps values read from the database for ttl, by key, at most
// maxCached of them. A value read while [ttlCache.clear] ran is not kept, so
// a clear (a revocation) is never undone by a read that started before it.
// It is safe for concurrent use.
type ttlCache[K comparable, V any] struct {
	ttl time.Duration // <= 0: nothing is kept
	mu  sync.Mutex
	gen uint64 // counts the clears
	m   map[K]ttlEntry[V]
}

type ttlEntry[V any] struct {
	v      V
	readAt time.Time
}

func newTTLCache[K comparable, V any](ttl time.Duration) *ttlCache[K, V] {
	return &ttlCache[K, V]{ttl: ttl, m: map[K]ttlEntry[V]{}}
}

// get returns the value of k read less than ttl before now, and the
// generation to give to put for a value read now.
func (c *ttlCache[K, V]) get(k K, now time.Time) (v V, ok bool, gen uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, found := c.m[k]
	if found && now.Sub(e.readAt) < c.ttl && !now.Before(e.readAt) {
		return e.v, true, c.gen
	}
	if found {
		delete(c.m, k)
	}
	return v, false, c.gen
}

// put keeps v, read at readAt, unless the cache was cleared since get
// returned gen.
func (c *ttlCache[K, V]) put(k K, v V, readAt time.Time, gen uint64) {
	if c.ttl <= 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if gen != c.gen {
		return
	}
	if len(c.m) >= maxCached {
		clear(c.m)
	}
	c.m[k] = ttlEntry[V]{v: v, readAt: readAt}
}

// clear forgets every value, and those being read.
func (c *ttlCache[K, V]) clear() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen++
	clear(c.m)
}
