package judge

import (
	"container/list"
	"crypto/sha256"
	"encoding/binary"
)

// cacheKey identifies a question: a SHA-256 of the model, the instruction
// and the sentence (each length-prefixed, so no two triples share a key but
// by collision).
type cacheKey [sha256.Size]byte

func (c *Cascade) key(instruction, sentence string) cacheKey {
	h := sha256.New()
	for _, s := range []string{c.Client.Model, instruction, sentence} {
		var n [8]byte
		binary.BigEndian.PutUint64(n[:], uint64(len(s)))
		h.Write(n[:])
		h.Write([]byte(s))
	}
	var k cacheKey
	h.Sum(k[:0])
	return k
}

// cached returns the verdict kept for key, counting a hit.
func (c *Cascade) cached(key cacheKey) (Verdict, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cache == nil {
		return Verdict{}, false
	}
	v, ok := c.cache.get(key)
	if ok {
		c.stats.CacheHits++
	}
	return v, ok
}

// store keeps an answered verdict.
func (c *Cascade) store(key cacheKey, v Verdict) {
	size := c.CacheSize
	if size == 0 {
		size = DefaultCacheSize
	}
	if size < 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cache == nil {
		c.cache = newLRU(size)
	}
	c.cache.put(key, v)
}

// lru is a least-recently-used map of verdicts; not safe for concurrent use.
type lru struct {
	size  int
	order *list.List // of *lruEntry, most recent first
	index map[cacheKey]*list.Element
}

type lruEntry struct {
	key cacheKey
	v   Verdict
}

func newLRU(size int) *lru {
	return &lru{size: size, order: list.New(), index: map[cacheKey]*list.Element{}}
}

func (l *lru) get(k cacheKey) (Verdict, bool) {
	e, ok := l.index[k]
	if !ok {
		return Verdict{}, false
	}
	l.order.MoveToFront(e)
	return e.Value.(*lruEntry).v, true
}

func (l *lru) put(k cacheKey, v Verdict) {
	if e, ok := l.index[k]; ok {
		e.Value.(*lruEntry).v = v
		l.order.MoveToFront(e)
		return
	}
	l.index[k] = l.order.PushFront(&lruEntry{k, v})
	for l.order.Len() > l.size {
		last := l.order.Back()
		delete(l.index, last.Value.(*lruEntry).key)
		l.order.Remove(last)
	}
}
