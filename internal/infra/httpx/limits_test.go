package httpx_test

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/aiusage/kit/internal/infra/httpx"
)

func TestLimiter(t *testing.T) {
	t.Parallel()
	l := httpx.NewLimiter(2, 3)
	a1, err := l.Acquire("a", "org1")
	require.NoError(t, err)
	_, err = l.Acquire("a", "org1")
	require.NoError(t, err)
	_, err = l.Acquire("a", "org1")
	require.ErrorIs(t, err, httpx.ErrTooManyConcurrent, "the key's third")
	b1, err := l.Acquire("b", "org1")
	require.NoError(t, err, "the organisation's third, of another key")
	_, err = l.Acquire("c", "org1")
	require.ErrorIs(t, err, httpx.ErrTooManyConcurrent, "the organisation's fourth")
	_, err = l.Acquire("d", "org2")
	require.NoError(t, err, "another organisation")
	a1()
	a1() // twice gives back one slot only
	b1()
	// org1 now holds a's second request: two more fit, not three.
	_, err = l.Acquire("c", "org1")
	require.NoError(t, err)
	_, err = l.Acquire("a", "org1")
	require.NoError(t, err, "a1 gave back a slot of a")
	_, err = l.Acquire("b", "org1")
	require.ErrorIs(t, err, httpx.ErrTooManyConcurrent, "b1 gave back its slot, but c and a took the organisation's")

	off := httpx.NewLimiter(-1, -1)
	for range 100 {
		_, err := off.Acquire("a", "o")
		require.NoError(t, err)
	}
	var none *httpx.Limiter
	release, err := none.Acquire("a", "o")
	require.NoError(t, err)
	release()
	def := httpx.NewLimiter(0, 0)
	for range httpx.DefaultConcurrentPerKey {
		_, err := def.Acquire("a", "o")
		require.NoError(t, err)
	}
	_, err = def.Acquire("a", "o")
	require.ErrorIs(t, err, httpx.ErrTooManyConcurrent)
}

func TestIsEventStream(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		method, accept string
		want           bool
	}{
		{"GET", "text/event-stream", true},
		{"GET", "application/json, text/event-stream", true},
		{"GET", "text/event-stream; q=0.9", true},
		{"POST", "application/json, text/event-stream", false},
		{"GET", "application/json", false},
		{"GET", "", false},
	} {
		r := httptest.NewRequest(c.method, "/", nil)
		if c.accept != "" {
			r.Header.Set("Accept", c.accept)
		}
		require.Equal(t, c.want, httpx.IsEventStream(r), "%s %q", c.method, c.accept)
	}
}

func TestBufferBody(t *testing.T) {
	t.Parallel()
	r := httptest.NewRequest("POST", "/", strings.NewReader("12345"))
	require.NoError(t, httpx.BufferBody(httptest.NewRecorder(), r, 5))
	b, _ := io.ReadAll(r.Body)
	require.Equal(t, "12345", string(b))

	r = httptest.NewRequest("POST", "/", strings.NewReader("123456"))
	require.True(t, httpx.IsTooLarge(httpx.BufferBody(httptest.NewRecorder(), r, 5)), "found while reading")
	r = httptest.NewRequest("POST", "/", bytes.NewReader(make([]byte, 10)))
	r.Body = io.NopCloser(failReader{}) // declared too large: never read
	r.ContentLength = 10
	require.True(t, httpx.IsTooLarge(httpx.BufferBody(httptest.NewRecorder(), r, 5)))
	r = httptest.NewRequest("GET", "/", nil)
	require.NoError(t, httpx.BufferBody(httptest.NewRecorder(), r, 5))
}

type failReader struct{}

func (failReader) Read([]byte) (int, error) { panic("read") }

func TestSecurityHeaders(t *testing.T) {
	t.Parallel()
	w := httptest.NewRecorder()
	httpx.SecurityHeaders(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "nope", http.StatusTeapot)
	})).ServeHTTP(w, httptest.NewRequest("GET", "/", nil))
	require.Equal(t, "nosniff", w.Header().Get("X-Content-Type-Options"))
	require.Equal(t, "no-store", w.Header().Get("Cache-Control"))
	w = httptest.NewRecorder()
	httpx.SecurityHeaders(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Cache-Control", "public, max-age=60")
	})).ServeHTTP(w, httptest.NewRequest("GET", "/", nil))
	require.Equal(t, "public, max-age=60", w.Header().Get("Cache-Control"), "a handler's own is kept")
}

func TestListStream(t *testing.T) {
	t.Parallel()
	tail := struct {
		Total int `json:"total"`
	}{3}
	w := httptest.NewRecorder()
	s := httpx.NewListStream(w, "items")
	require.False(t, s.Started())
	require.NoError(t, s.Item(map[string]string{"a": "<b>"}))
	require.True(t, s.Started())
	require.NoError(t, s.Item(1))
	require.NoError(t, s.Close(tail))
	require.JSONEq(t, `{"items":[{"a":"<b>"},1],"total":3}`, w.Body.String())
	require.Contains(t, w.Body.String(), "<b>", "HTML is not escaped, as WriteJSON")
	require.Equal(t, "application/json", w.Header().Get("Content-Type"))
	require.Equal(t, "no-store", w.Header().Get("Cache-Control"))

	w = httptest.NewRecorder()
	require.NoError(t, httpx.NewListStream(w, "data").Close(struct{}{}))
	require.JSONEq(t, `{"data":[]}`, w.Body.String())
	w = httptest.NewRecorder()
	require.Error(t, httpx.NewListStream(w, "data").Close([]int{}))
	require.Empty(t, w.Body.String(), "nothing written before the tail is known good")

	s = httpx.NewListStream(httptest.NewRecorder(), "items")
	require.NoError(t, s.Item(1))
	require.PanicsWithValue(t, http.ErrAbortHandler, s.Abort)
}
