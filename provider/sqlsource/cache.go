package sqlsource

import (
	"container/list"
	"context"
	"database/sql"
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/aiusage/kit/provider"
)

// rawPages reads the pages of the raw lists ([Source.ListConversationsRaw]
// and its siblings), given a valid limit: the Source itself, from the
// database, or [cachedPages] in front of it.
type rawPages interface {
	page(ctx context.Context, op string, k *keyset) (provider.Page[provider.RawRecord], error)
}

// cachedPages serves the raw lists of a Source from a cache of recently
// served pages while the tenant's list is unchanged since the page was
// read, and from the Source otherwise (see [WithPageCache]).
//
// Revisions. Every write to a tenant's conversations, assistants or events
// sets the row (tenant, resource) of provider_revisions to a new random
// number, in the write's transaction. A page read while the revision was R
// holds data at least as new as R, so it may be served again for as long as
// the revision is still R: checking that costs one primary-key lookup, where
// reading a page of stored JSON again costs a hundred rows of a few
// kilobytes. Random revisions (rather than a counter) stay unique when a
// database is recreated under a running process.
type cachedPages struct {
	src   *Source
	cache *pageCache
}

// page returns the page of k: from the cache while the tenant's table is
// unchanged since the page was read, otherwise from the database.
//
// A page not in the cache at all (the common case of a client walking the
// whole list, each page once) is read with its revision in one statement
// (see [keyset.sqlWithRevision]), one round trip instead of two; a page in
// the cache is checked against the revision first.
func (c *cachedPages) page(ctx context.Context, op string, k *keyset) (provider.Page[provider.RawRecord], error) {
	key := cacheKey(k.sql())
	if !c.cache.has(key) {
		p, rev, err := c.src.readPage(ctx, op, k, true)
		if err == nil && len(p.Items) > 0 {
			c.cache.put(key, rev, p)
		}
		return p, err
	}
	rev, err := c.src.revision(ctx, revKey{k.tenant, k.table})
	if err != nil {
		return provider.Page[provider.RawRecord]{}, dbError(ctx, op, err)
	}
	if p, ok := c.cache.get(key, rev); ok {
		return p, nil
	}
	p, _, err := c.src.readPage(ctx, op, k, false)
	if err == nil {
		c.cache.put(key, rev, p)
	}
	return p, err
}

const (
	revisionSQL     = `SELECT rev FROM provider_revisions WHERE tenant = $1 AND resource = $2`
	bumpRevisionSQL = `INSERT INTO provider_revisions (tenant, resource, rev) VALUES ($1, $2, $3)
ON CONFLICT (tenant, resource) DO UPDATE SET rev = excluded.rev`
)

// revKey names a revision: a tenant's table.
type revKey struct{ tenant, table string }

// bumpRevision gives the tenant's table a new revision; cn must be the
// transaction of the write.
func bumpRevision(ctx context.Context, cn conn, k revKey) error {
	return cn.exec(ctx, bumpRevisionSQL, k.tenant, k.table, rand.Int64N(math.MaxInt64)+1)
}

// revision returns the current revision of the tenant's table, 0 before its
// first write.
func (s *Source) revision(ctx context.Context, k revKey) (int64, error) {
	st, err := s.prepared(ctx, revisionSQL)
	if err != nil {
		return 0, err
	}
	var rev int64
	err = st.QueryRowContext(ctx, k.tenant, k.table).Scan(&rev)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, nil
	}
	return rev, err
}

// pageCache keeps recently served pages of stored JSON with the revision
// they were read at, least recently used first out, within a byte budget.
type pageCache struct {
	max int64

	mu    sync.Mutex
	size  int64
	lru   *list.List // of *cachedPage, most recent at the front
	pages map[string]*list.Element
}

type cachedPage struct {
	key  string
	rev  int64
	page provider.Page[provider.RawRecord]
	size int64
}

func newPageCache(maxBytes int64) *pageCache {
	return &pageCache{max: maxBytes, lru: list.New(), pages: map[string]*list.Element{}}
}

// has reports whether a page is cached under key, at any revision.
func (c *pageCache) has(key string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, ok := c.pages[key]
	return ok
}

// get returns the page cached under key if it was read at revision rev. The
// Items slice is the caller's; the JSON bytes are shared.
func (c *pageCache) get(key string, rev int64) (provider.Page[provider.RawRecord], bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.pages[key]
	if !ok {
		return provider.Page[provider.RawRecord]{}, false
	}
	p := e.Value.(*cachedPage)
	if p.rev != rev {
		c.remove(e)
		return provider.Page[provider.RawRecord]{}, false
	}
	c.lru.MoveToFront(e)
	return provider.Page[provider.RawRecord]{Items: slices.Clone(p.page.Items), HasMore: p.page.HasMore}, true
}

// put caches page under key, read at revision rev. A page larger than a
// quarter of the budget is not kept.
func (c *pageCache) put(key string, rev int64, page provider.Page[provider.RawRecord]) {
	size := int64(len(key)) + 128
	for _, r := range page.Items {
		size += int64(len(r.JSON)+len(r.Key.ID)) + 64
	}
	if size > c.max/4 {
		return
	}
	p := &cachedPage{key: key, rev: rev, page: provider.Page[provider.RawRecord]{Items: slices.Clone(page.Items), HasMore: page.HasMore}, size: size}
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.pages[key]; ok {
		c.remove(e)
	}
	c.pages[key] = c.lru.PushFront(p)
	c.size += size
	for c.size > c.max {
		c.remove(c.lru.Back())
	}
}

func (c *pageCache) remove(e *list.Element) {
	p := c.lru.Remove(e).(*cachedPage)
	delete(c.pages, p.key)
	c.size -= p.size
}

// cacheKey identifies a query and its arguments (strings, integers).
func cacheKey(query string, args []any) string {
	var b strings.Builder
	b.Grow(len(query) + 16*len(args))
	b.WriteString(query)
	for _, a := range args {
		b.WriteByte(0)
		switch v := a.(type) {
		case string:
			b.WriteString(strconv.Itoa(len(v)))
			b.WriteByte(':')
			b.WriteString(v)
		case int64:
			b.WriteString(strconv.FormatInt(v, 10))
		case int:
			b.WriteString(strconv.Itoa(v))
		default:
			panic("sqlsource: cacheKey: unexpected argument type") // the keyset queries take strings and integers
		}
	}
	return b.String()
}
