package provider

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"github.com/go-chi/chi/v5"
	"github.com/go-chi/chi/v5/middleware"

	"github.com/aiusage/kit/internal/infra/httpx"
	"github.com/aiusage/kit/spec"
)

// Handler serves the AI usage data interface over a [DataSource]:
//
//	GET /conversations        GET /conversations/{id}
//	GET /assistants           GET /assistants/{id}
//	GET /events               GET /usage
//
// Mount it under any prefix with http.StripPrefix. It authenticates every
// request, enforces scopes, parses and checks the query parameters, seals
// cursors, answers errors as RFC 9457 problem details, compresses with gzip
// when the client accepts it, recovers panics into 500 problems and logs one
// line per request to the logger of [WithLogger]. Every answer is marked
// X-Content-Type-Options: nosniff and Cache-Control: no-store: it is a
// customer's data, for the credential that asked only.
type Handler struct {
	cfg    *config
	ds     DataSource
	raw    RawSource // nil when ds has no raw capability
	rawGet RawGetter // nil when ds cannot read single records as JSON
	sealer *sealer
	router chi.Router
	style  httpx.ErrorStyle
}

// NewHandler returns a Handler serving ds. One of [WithTokens] or
// [WithAuthenticator] is required.
func NewHandler(ds DataSource, opts ...Option) (*Handler, error) {
	if ds == nil {
		return nil, errors.New("provider: NewHandler: nil DataSource")
	}
	cfg, err := newConfig(opts)
	if err != nil {
		return nil, err
	}
	s, err := newSealer(cfg.cursorKey)
	if err != nil {
		return nil, err
	}
	h := &Handler{cfg: cfg, ds: ds, sealer: s, style: errorStyle(cfg)}
	h.raw, _ = ds.(RawSource)
	h.rawGet, _ = ds.(RawGetter)
	h.router = h.routes()
	return h, nil
}

// ServeHTTP implements http.Handler.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) { h.router.ServeHTTP(w, r) }

func (h *Handler) adapt(fn httpx.HandlerFunc) http.HandlerFunc { return httpx.Adapt(fn, h.writeError) }

func (h *Handler) routes() chi.Router {
	r := chi.NewRouter()
	r.Use(httpx.SecurityHeaders, httpx.RequestID, httpx.AccessLog(h.cfg.logger), httpx.Recover(h.writeError), middleware.GetHead)
	// Every endpoint refuses a query string url.ParseQuery cannot parse,
	// which r.URL.Query() would silently cut short.
	r.Use(httpx.StrictQuery(func(w http.ResponseWriter, r *http.Request, err *httpx.QueryError) {
		h.writeError(w, r, Invalid(err.Param, "%s", err.Message))
	}))
	r.NotFound(h.adapt(func(http.ResponseWriter, *http.Request) error {
		return &Error{Kind: ErrNotFound, Detail: "No such endpoint. The endpoints are /conversations, /conversations/{id}, /assistants, /assistants/{id}, /events and /usage."}
	}))
	r.MethodNotAllowed(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Allow", "GET, HEAD")
		h.writeError(w, r, &Error{Kind: spec.ErrMethodNotAllowed, Detail: "The interface is read-only: use GET."})
	})
	r.Group(func(r chi.Router) {
		r.Use(h.authenticate, middleware.Compress(h.cfg.gzipLevel, "application/json", spec.ProblemContentType))
		r.With(h.requireScope(ScopeConversations)).Get("/conversations", h.adapt(h.listConversations))
		r.With(h.requireScope(ScopeConversations)).Get("/conversations/{id}", h.adapt(h.getConversation))
		r.With(h.requireScope(ScopeAssistants)).Get("/assistants", h.adapt(h.listAssistants))
		r.With(h.requireScope(ScopeAssistants)).Get("/assistants/{id}", h.adapt(h.getAssistant))
		r.With(h.requireScope(ScopeEvents)).Get("/events", h.adapt(h.listEvents))
		r.With(h.requireScope(ScopeUsage)).Get("/usage", h.adapt(h.usage))
	})
	for _, m := range h.cfg.mounts {
		// Not compressed here: a mounted protocol (MCP's event streams)
		// manages its own responses.
		r.With(h.authenticate).Handle(m.pattern, m.h)
		r.With(h.authenticate).Handle(m.pattern+"/*", m.h)
	}
	return r
}

// --- middleware

func (h *Handler) authenticate(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		cred, ok := httpx.Credential(r, false)
		if !ok {
			h.writeError(w, r, &Error{Kind: ErrUnauthorized, Detail: "No credential: send Authorization: Bearer <token> or X-API-Key: <token>."})
			return
		}
		p, err := h.cfg.auth.Authenticate(r.Context(), cred)
		if err != nil {
			if errors.Is(err, ErrUnauthorized) {
				err = &Error{Kind: ErrUnauthorized, Detail: "The credential is not valid."}
			}
			h.writeError(w, r, err)
			return
		}
		httpx.Annotate(r.Context(), slog.String("credential", p.Name))
		release, err := h.cfg.inFlight.Acquire(p.Name+"\x00"+p.Tenant, p.Tenant)
		if err != nil {
			httpx.CloseUnread(w, r) // an MCP request's body: answer at once, unread
			w.Header().Set("Retry-After", httpx.RetryAfterConcurrent)
			h.writeError(w, r, &Error{Kind: spec.ErrRateLimited,
				Detail: "Too many requests of this credential or its tenant are in flight; retry when one has finished."})
			return
		}
		defer release()
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), principalKey{}, p)))
	})
}

func (h *Handler) requireScope(scope string) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			p, _ := PrincipalFrom(r.Context())
			if p == nil || !p.Allows(scope) {
				h.writeError(w, r, &Error{Kind: ErrForbidden, Detail: "The credential lacks the scope " + scope + "."})
				return
			}
			next.ServeHTTP(w, r)
		})
	}
}

func principal(r *http.Request) *Principal {
	p, _ := PrincipalFrom(r.Context())
	return p
}

// --- cursors

// openCursor decodes the cursor a client sent with the request's filters.
func (h *Handler) openCursor(text string, ep endpoint, tenant string, filters [12]byte) (cursor, error) {
	c, err := h.sealer.open(text)
	switch {
	case err != nil:
		return c, Invalid("cursor", "is not a cursor this provider issued; send nextCursor exactly as received")
	case c.endpoint != ep:
		return c, Invalid("cursor", "was issued by %s, not %s", c.endpoint.path(), ep.path())
	case c.tenant != tenantDigest(tenant):
		return c, Invalid("cursor", "was issued to another credential")
	case c.filters != filters:
		return c, Invalid("cursor", "was issued for other filters; send a cursor with the same filters as the request that returned it")
	}
	return c, nil
}

// --- list endpoints

// list describes one keyset list request for serveList. raw and typed read
// the page of the query that setAfter positions.
type list[T any] struct {
	endpoint endpoint
	digest   [12]byte // of the request's filters
	cursor   string
	limit    int
	setAfter func(*Key)
	raw      func(context.Context) (Page[RawRecord], error) // nil without RawSource
	typed    func(context.Context) (Page[T], error)
	key      func(*T) Key
}

// serveList opens the request's cursor, reads the page (as stored JSON when
// the source can) and writes the envelope with the next cursor.
func serveList[T any](h *Handler, w http.ResponseWriter, r *http.Request, tenant string, l list[T]) error {
	if l.cursor != "" {
		c, err := h.openCursor(l.cursor, l.endpoint, tenant, l.digest)
		if err != nil {
			return err
		}
		l.setAfter(&c.key)
	}
	next := func(k Key) string {
		return h.sealer.seal(cursor{endpoint: l.endpoint, tenant: tenantDigest(tenant), filters: l.digest, key: k})
	}
	if l.raw != nil {
		page, err := l.raw(r.Context())
		if err != nil {
			return err
		}
		return writeRawPage(w, page, l.limit, h.cfg.maxPage, next)
	}
	page, err := l.typed(r.Context())
	if err != nil {
		return err
	}
	return writePage(w, page, l.limit, h.cfg.maxPage, l.key, next)
}

func (h *Handler) listConversations(w http.ResponseWriter, r *http.Request) error {
	p, err := parseConversationParams(r.URL.Query())
	if err != nil {
		return err
	}
	tenant := principal(r).Tenant
	q := ConversationQuery{Tenant: tenant, UpdatedSince: p.updatedSince, StartedAfter: p.startedAfter, Limit: p.limit, MaxBytes: h.cfg.maxPage}
	l := list[spec.Conversation]{
		endpoint: endpointConversations, digest: p.digest(), cursor: p.cursor, limit: p.limit,
		setAfter: func(k *Key) { q.After = k },
		typed:    func(ctx context.Context) (Page[spec.Conversation], error) { return h.ds.ListConversations(ctx, q) },
		key:      ConversationKey,
	}
	if h.raw != nil {
		l.raw = func(ctx context.Context) (Page[RawRecord], error) { return h.raw.ListConversationsRaw(ctx, q) }
	}
	return serveList(h, w, r, tenant, l)
}

func (h *Handler) listAssistants(w http.ResponseWriter, r *http.Request) error {
	p, err := parseAssistantParams(r.URL.Query())
	if err != nil {
		return err
	}
	tenant := principal(r).Tenant
	q := AssistantQuery{Tenant: tenant, UpdatedSince: p.updatedSince, Limit: p.limit, MaxBytes: h.cfg.maxPage}
	l := list[spec.Assistant]{
		endpoint: endpointAssistants, digest: p.digest(), cursor: p.cursor, limit: p.limit,
		setAfter: func(k *Key) { q.After = k },
		typed:    func(ctx context.Context) (Page[spec.Assistant], error) { return h.ds.ListAssistants(ctx, q) },
		key:      AssistantKey,
	}
	if h.raw != nil {
		l.raw = func(ctx context.Context) (Page[RawRecord], error) { return h.raw.ListAssistantsRaw(ctx, q) }
	}
	return serveList(h, w, r, tenant, l)
}

func (h *Handler) listEvents(w http.ResponseWriter, r *http.Request) error {
	p, err := parseEventParams(r.URL.Query())
	if err != nil {
		return err
	}
	tenant := principal(r).Tenant
	q := EventQuery{Tenant: tenant, OccurredAfter: p.occurredAfter, Category: p.category, Limit: p.limit, MaxBytes: h.cfg.maxPage}
	l := list[spec.Event]{
		endpoint: endpointEvents, digest: p.digest(), cursor: p.cursor, limit: p.limit,
		setAfter: func(k *Key) { q.After = k },
		typed:    func(ctx context.Context) (Page[spec.Event], error) { return h.ds.ListEvents(ctx, q) },
		key:      EventKey,
	}
	if h.raw != nil {
		l.raw = func(ctx context.Context) (Page[RawRecord], error) { return h.raw.ListEventsRaw(ctx, q) }
	}
	return serveList(h, w, r, tenant, l)
}

func (h *Handler) usage(w http.ResponseWriter, r *http.Request) error {
	p, err := parseUsageParams(r.URL.Query(), h.cfg.now())
	if err != nil {
		return err
	}
	tenant := principal(r).Tenant
	digest := p.digest()
	q := UsageQuery{Tenant: tenant, Start: p.start, End: p.end, Granularity: p.granularity, GroupBy: p.groupBy, Limit: p.limit}
	if p.cursor != "" {
		c, err := h.openCursor(p.cursor, endpointUsage, tenant, digest)
		if err != nil {
			return err
		}
		// The cursor carries the resolved range; a range sent with it must
		// resolve to the same.
		if p.startSet && !p.start.Equal(c.start) || p.endSet && !p.end.Equal(c.end) {
			return Invalid("cursor", "was issued for another startAt/endAt range; send the same range or leave it out")
		}
		q.Start, q.End, q.After = c.start, c.end, &c.usageKey
	}
	page, err := h.ds.Usage(r.Context(), q)
	if err != nil {
		return err
	}
	next := func(k UsageKey) string {
		return h.sealer.seal(cursor{endpoint: endpointUsage, tenant: tenantDigest(tenant), filters: digest,
			start: q.Start, end: q.End, usageKey: k})
	}
	return writePage(w, page, p.limit, h.cfg.maxPage, func(b *spec.UsageBucket) UsageKey { return BucketKey(b) }, next)
}

// --- single records

// pathID returns the {id} of the request path, decoded exactly once: chi
// routes on the escaped path (and so returns an escaped segment) only when
// the request's path has escapes that decoding would lose, such as %2F.
func pathID(r *http.Request) (string, error) {
	id := chi.URLParam(r, "id")
	if r.URL.RawPath != "" {
		var err error
		if id, err = url.PathUnescape(id); err != nil {
			return "", Invalid("id", "is not a valid path segment")
		}
	}
	if err := CheckIDLength(id); err != nil {
		return "", err
	}
	if !utf8.ValidString(id) {
		return "", Invalid("id", "is not valid UTF-8")
	}
	if strings.ContainsFunc(id, unicode.IsControl) {
		return "", Invalid("id", "contains control characters")
	}
	return id, nil
}

func (h *Handler) getConversation(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r)
	if err != nil {
		return err
	}
	if h.rawGet != nil {
		b, err := h.rawGet.GetConversationRaw(r.Context(), principal(r).Tenant, id)
		if err != nil {
			return notFoundDetail(err, "conversation", id)
		}
		return writeRawRecord(w, b)
	}
	c, err := h.ds.GetConversation(r.Context(), principal(r).Tenant, id)
	if err != nil {
		return notFoundDetail(err, "conversation", id)
	}
	return writeJSON(w, c)
}

func (h *Handler) getAssistant(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r)
	if err != nil {
		return err
	}
	if h.rawGet != nil {
		b, err := h.rawGet.GetAssistantRaw(r.Context(), principal(r).Tenant, id)
		if err != nil {
			return notFoundDetail(err, "assistant", id)
		}
		return writeRawRecord(w, b)
	}
	a, err := h.ds.GetAssistant(r.Context(), principal(r).Tenant, id)
	if err != nil {
		return notFoundDetail(err, "assistant", id)
	}
	return writeJSON(w, a)
}

func notFoundDetail(err error, what, id string) error {
	var e *Error
	if errors.Is(err, ErrNotFound) && !errors.As(err, &e) {
		return &Error{Kind: ErrNotFound, Detail: fmt.Sprintf("No %s with id %q.", what, truncate(id))}
	}
	return err
}

// --- writing

var bufPool = sync.Pool{New: func() any { return new(bytes.Buffer) }}

func writeJSON(w http.ResponseWriter, v any) error {
	buf := bufPool.Get().(*bytes.Buffer)
	defer putBuf(buf)
	buf.Reset()
	if err := json.NewEncoder(buf).Encode(v); err != nil {
		return fmt.Errorf("encode response: %w", err)
	}
	return writeBody(w, buf.Bytes())
}

// writeRawRecord writes one record's stored JSON followed by a newline, as
// writeJSON would have encoded it.
func writeRawRecord(w http.ResponseWriter, b json.RawMessage) error {
	if !json.Valid(b) {
		return errors.New("data source returned a record that is not valid JSON")
	}
	buf := bufPool.Get().(*bytes.Buffer)
	defer putBuf(buf)
	buf.Reset()
	buf.Write(b)
	buf.WriteByte('\n')
	return writeBody(w, buf.Bytes())
}

func putBuf(b *bytes.Buffer) {
	if b.Cap() <= 4<<20 {
		bufPool.Put(b)
	}
}

func writeBody(w http.ResponseWriter, b []byte) error {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(b) // an error means the client went away: nothing more to do
	return nil
}

// checkPage guards the envelope against a DataSource that breaks its
// contract: more items than asked, or no items while claiming more.
func checkPage(n, limit int, hasMore bool) (int, bool, error) {
	if n > limit {
		return limit, true, nil
	}
	if hasMore && n == 0 {
		return 0, false, errors.New("data source returned an empty page with HasMore set")
	}
	return n, hasMore, nil
}

// writeRawPage writes the list envelope around stored record JSON, up to
// budget bytes of records (see WithMaxPageBytes). When the source laid the
// records out as they are served, one after the other with a comma between
// them in one buffer (see [RawRecord]), those bytes are written as they are,
// without copying them into the response's buffer first.
func writeRawPage(w http.ResponseWriter, page Page[RawRecord], limit, budget int, next func(Key) string) error {
	n, hasMore, err := checkPage(len(page.Items), limit, page.HasMore)
	if err != nil {
		return err
	}
	buf := bufPool.Get().(*bytes.Buffer)
	defer putBuf(buf)
	buf.Reset()
	size := 0
	for i, rec := range page.Items[:n] {
		if i > 0 && size+len(rec.JSON) > budget {
			n, hasMore = i, true
			break
		}
		size += len(rec.JSON) + 1
	}
	// The records go into buf unless they already lie as served (span).
	span, joined := joinedJSON(page.Items[:n])
	buf.WriteString(`{"data":[`)
	if !joined {
		buf.Grow(size + 64)
		for i, rec := range page.Items[:n] {
			if i > 0 {
				buf.WriteByte(',')
			}
			buf.Write(rec.JSON)
		}
	}
	head := buf.Len()
	buf.WriteString(`],"hasMore":`)
	writeTail(buf, hasMore, func() string { return next(page.Items[n-1].Key) })
	if !joined {
		return writeBody(w, buf.Bytes())
	}
	b := buf.Bytes()
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(b)+len(span)))
	w.WriteHeader(http.StatusOK)
	// An error means the client went away: nothing more to do.
	if _, err := w.Write(b[:head]); err == nil {
		if _, err := w.Write(span); err == nil {
			_, _ = w.Write(b[head:])
		}
	}
	return nil
}

// joinedJSON returns the records' JSON joined by commas, as the list serves
// them, when the records already lie so in one buffer: each one's bytes
// followed, within its slice's capacity, by a comma and the next record's
// first byte. It reports false otherwise, and for no records.
func joinedJSON(items []RawRecord) ([]byte, bool) {
	if len(items) == 0 || len(items[0].JSON) == 0 {
		return nil, false
	}
	first := items[0].JSON
	total := len(first)
	for i := 1; i < len(items); i++ {
		prev, cur := items[i-1].JSON, items[i].JSON
		if len(cur) == 0 || cap(prev) < len(prev)+1+len(cur) {
			return nil, false
		}
		ext := prev[:len(prev)+1+len(cur)]
		if ext[len(prev)] != ',' || &ext[len(prev)+1] != &cur[0] {
			return nil, false
		}
		total += 1 + len(cur)
	}
	if cap(first) < total {
		return nil, false
	}
	return first[:total], true
}

// writePage encodes a page of structs into the list envelope, up to budget
// bytes of records (see WithMaxPageBytes).
func writePage[T any, K any](w http.ResponseWriter, page Page[T], limit, budget int, key func(*T) K, next func(K) string) error {
	n, hasMore, err := checkPage(len(page.Items), limit, page.HasMore)
	if err != nil {
		return err
	}
	buf := bufPool.Get().(*bytes.Buffer)
	defer putBuf(buf)
	buf.Reset()
	buf.WriteString(`{"data":[`)
	enc := json.NewEncoder(buf)
	start := buf.Len()
	for i := range page.Items[:n] {
		mark := buf.Len()
		if i > 0 {
			buf.WriteByte(',')
		}
		if err := enc.Encode(&page.Items[i]); err != nil {
			return fmt.Errorf("encode record: %w", err)
		}
		buf.Truncate(buf.Len() - 1) // Encode's newline
		if i > 0 && buf.Len()-start > budget {
			buf.Truncate(mark) // the record that went past the budget
			n, hasMore = i, true
			break
		}
	}
	buf.WriteString(`],"hasMore":`)
	writeTail(buf, hasMore, func() string { return next(key(&page.Items[n-1])) })
	return writeBody(w, buf.Bytes())
}

func writeTail(buf *bytes.Buffer, hasMore bool, cursor func() string) {
	if !hasMore {
		buf.WriteString(`false,"nextCursor":null}`)
		return
	}
	buf.WriteString(`true,"nextCursor":"`)
	buf.WriteString(cursor()) // base64url: nothing to escape
	buf.WriteString(`"}`)
}
