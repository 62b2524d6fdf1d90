package faultproxy

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

// listSize is the number of records behind each fake list endpoint.
const listSize = 45

// target is a fake provider of the AI usage data interface: list endpoints
// paged by cursor, records by id, problem bodies, gzip when asked for. It
// records every request by its X-Trace header.
type target struct {
	*httptest.Server

	mu   sync.Mutex
	seen map[string]*http.Request
}

func newTarget(t *testing.T) *target {
	t.Helper()
	tg := &target{seen: map[string]*http.Request{}}
	mux := http.NewServeMux()
	for _, name := range []string{"conversations", "assistants", "events", "usage"} {
		mux.HandleFunc("GET /"+name, func(w http.ResponseWriter, r *http.Request) { tg.list(w, r, name) })
	}
	for _, name := range []string{"conversations", "assistants"} {
		mux.HandleFunc("GET /"+name+"/{id}", func(w http.ResponseWriter, r *http.Request) { tg.item(w, r, name) })
	}
	tg.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tg.mu.Lock()
		if id := r.Header.Get("X-Trace"); id != "" {
			tg.seen[id] = r.Clone(r.Context())
		}
		tg.mu.Unlock()
		mux.ServeHTTP(w, r)
	}))
	t.Cleanup(tg.Close)
	return tg
}

func (tg *target) url(t *testing.T) *url.URL {
	t.Helper()
	u, err := url.Parse(tg.URL)
	require.NoError(t, err)
	return u
}

// request returns the request the target received with X-Trace: id, or nil.
func (tg *target) request(id string) *http.Request {
	tg.mu.Lock()
	defer tg.mu.Unlock()
	return tg.seen[id]
}

func record(kind string, i int) map[string]any {
	return map[string]any{
		"id":        fmt.Sprintf("%s-%04d", kind[:1], i),
		"title":     fmt.Sprintf("Record %d of %s — with some text to make it longer", i, kind),
		"tokens":    1000 + 37*i,
		"createdAt": fmt.Sprintf("2026-01-%02dT10:00:00Z", 1+i%28),
	}
}

func (tg *target) list(w http.ResponseWriter, r *http.Request, kind string) {
	q := r.URL.Query()
	offset := 0
	if c := q.Get("cursor"); c != "" {
		n, err := strconv.Atoi(strings.TrimPrefix(c, "o"))
		if !strings.HasPrefix(c, "o") || err != nil || n < 0 || n > listSize {
			writeTarget(w, r, http.StatusBadRequest, "application/problem+json",
				`{"type":"about:blank","title":"Bad Request","status":400,"detail":"The cursor is not valid."}`)
			return
		}
		offset = n
	}
	limit := 20
	if l, err := strconv.Atoi(q.Get("limit")); err == nil && l > 0 {
		limit = l
	}
	end := min(offset+limit, listSize)
	env := struct {
		Data       []map[string]any `json:"data"`
		HasMore    bool             `json:"hasMore"`
		NextCursor *string          `json:"nextCursor"`
	}{Data: []map[string]any{}}
	for i := offset; i < end; i++ {
		env.Data = append(env.Data, record(kind, i))
	}
	if end < listSize {
		c := "o" + strconv.Itoa(end)
		env.HasMore, env.NextCursor = true, &c
	}
	var b bytes.Buffer
	if err := json.NewEncoder(&b).Encode(env); err != nil { // trailing newline on purpose
		panic(err)
	}
	if kind == "events" { // streamed, no Content-Length
		w.Header().Set("Content-Type", "application/json")
		for chunk := range chunks(b.Bytes(), 512) {
			_, _ = w.Write(chunk)
			_ = http.NewResponseController(w).Flush()
		}
		return
	}
	writeTarget(w, r, http.StatusOK, "application/json", b.String())
}

func chunks(b []byte, n int) func(func([]byte) bool) {
	return func(yield func([]byte) bool) {
		for len(b) > 0 {
			k := min(n, len(b))
			if !yield(b[:k]) {
				return
			}
			b = b[k:]
		}
	}
}

func (tg *target) item(w http.ResponseWriter, r *http.Request, kind string) {
	id := r.PathValue("id")
	for i := range listSize {
		rec := record(kind, i)
		if rec["id"] == id {
			b, _ := json.Marshal(rec)
			writeTarget(w, r, http.StatusOK, "application/json", string(b))
			return
		}
	}
	writeTarget(w, r, http.StatusNotFound, "application/problem+json",
		`{"type":"about:blank","title":"Not Found","status":404,"detail":"No such record."}`)
}

// writeTarget answers with fixed headers, gzip-encoding the body when the
// request accepts it.
func writeTarget(w http.ResponseWriter, r *http.Request, status int, contentType, body string) {
	raw := []byte(body)
	h := w.Header()
	h.Set("Content-Type", contentType)
	h.Set("Cache-Control", "private, max-age=0")
	h.Set("ETag", fmt.Sprintf(`"%x"`, sha256.Sum256(raw)))
	h.Add("X-Multi", "one")
	h.Add("X-Multi", "two")
	h.Set("Vary", "Accept-Encoding")
	if strings.Contains(r.Header.Get("Accept-Encoding"), "gzip") {
		var b bytes.Buffer
		zw := gzip.NewWriter(&b)
		_, _ = zw.Write(raw)
		_ = zw.Close()
		raw = b.Bytes()
		h.Set("Content-Encoding", "gzip")
	}
	h.Set("Content-Length", strconv.Itoa(len(raw)))
	w.WriteHeader(status)
	_, _ = w.Write(raw)
}
