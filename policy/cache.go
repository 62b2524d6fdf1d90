package policy

import (
	"container/list"
	"encoding/binary"
	"hash/maphash"
	"sync"

	"github.com/aiusage/kit/spec"
)

// DefaultCacheEntries is the number of sets a [Cache] keeps when NewCache is
// given maxEntries <= 0.
const DefaultCacheEntries = 1000

// Cache keeps compiled Sets per key (an agent id) and recompiles when the
// instructions change. It is safe for concurrent use; concurrent Gets of a key
// that needs compiling compile it once.
type Cache struct {
	opts Options
	max  int
	seed maphash.Seed

	mu      sync.Mutex
	entries map[string]*list.Element // of *cacheEntry
	lru     list.List                // most recently used first
}

type cacheEntry struct {
	key   string
	fp    uint64
	ready chan struct{} // closed when set and err are
	set   *Set
	err   error
}

// NewCache returns a Cache compiling with opts and keeping at most maxEntries
// sets (DefaultCacheEntries, 1000, when maxEntries <= 0), evicting the least
// recently used.
func NewCache(opts Options, maxEntries int) *Cache {
	if maxEntries <= 0 {
		maxEntries = DefaultCacheEntries
	}
	return &Cache{opts: opts, max: maxEntries, seed: maphash.MakeSeed(), entries: map[string]*list.Element{}}
}

// Get returns the compiled set of instructions for key. It compiles them
// when key is not cached or its instructions differ from the cached ones:
// they are compared by a 64-bit fingerprint of every instruction's id,
// updatedAt and content (title, action, criticality, allowRedaction and
// trigger), in order. A compile error is cached like a set, until the
// instructions change. Beyond maxEntries keys, the least recently used is
// evicted.
func (c *Cache) Get(key string, instructions []spec.Instruction) (*Set, error) {
	fp := c.fingerprint(instructions)
	c.mu.Lock()
	if el, ok := c.entries[key]; ok {
		e := el.Value.(*cacheEntry)
		if e.fp == fp {
			c.lru.MoveToFront(el)
			c.mu.Unlock()
			<-e.ready
			return e.set, e.err
		}
		c.lru.Remove(el)
	}
	e := &cacheEntry{key: key, fp: fp, ready: make(chan struct{})}
	c.entries[key] = c.lru.PushFront(e)
	for c.lru.Len() > c.max {
		old := c.lru.Back()
		c.lru.Remove(old)
		delete(c.entries, old.Value.(*cacheEntry).key)
	}
	c.mu.Unlock()
	defer close(e.ready)
	e.set, e.err = Compile(instructions, c.opts)
	return e.set, e.err
}

// Invalidate drops the set cached for key, if any.
func (c *Cache) Invalidate(key string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.entries[key]; ok {
		c.lru.Remove(el)
		delete(c.entries, key)
	}
}

// Len returns the number of keys cached.
func (c *Cache) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lru.Len()
}

// fingerprint hashes what Compile reads of instructions, plus ids and
// updatedAt; strings are length-prefixed so that no two lists collide by
// construction.
func (c *Cache) fingerprint(instructions []spec.Instruction) uint64 {
	var h maphash.Hash
	h.SetSeed(c.seed)
	var buf [8]byte
	num := func(n int64) {
		binary.LittleEndian.PutUint64(buf[:], uint64(n))
		_, _ = h.Write(buf[:])
	}
	str := func(s string) {
		num(int64(len(s)))
		_, _ = h.WriteString(s)
	}
	num(int64(len(instructions)))
	for _, in := range instructions {
		str(in.ID)
		num(in.UpdatedAt.UnixNano())
		str(in.Title)
		str(in.Action)
		str(in.Criticality)
		flags := int64(0)
		if in.AllowRedaction {
			flags |= 1
		}
		if in.Trigger.CaseSensitive() {
			flags |= 2
		}
		num(flags)
		str(in.Trigger.Type)
		str(in.Trigger.Text)
		str(in.Trigger.Sensitivity)
		str(in.Trigger.Pattern)
		num(int64(len(in.Trigger.Values)))
		for _, v := range in.Trigger.Values {
			str(v)
		}
	}
	return h.Sum64()
}
