package consumer_test

import (
	"compress/gzip"
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/aiusage/kit/consumer"
	"github.com/aiusage/kit/provider"
)

// clientFor returns a Client of srv that never really sleeps, and the waits
// it was asked for.
func clientFor(t *testing.T, srv *httptest.Server, mut ...func(*consumer.ClientConfig)) (*consumer.Client, *[]time.Duration) {
	t.Helper()
	var waits []time.Duration
	cfg := consumer.ClientConfig{URL: srv.URL + "/api/", Token: "tok", Seed: 1,
		Sleep: func(ctx context.Context, d time.Duration) error { waits = append(waits, d); return ctx.Err() }}
	for _, m := range mut {
		m(&cfg)
	}
	c, err := consumer.NewClient(cfg)
	require.NoError(t, err)
	return c, &waits
}

func TestClientSendsQueryAndCredential(t *testing.T) {
	t.Parallel()
	var got []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = append(got, r.URL.Path+"?"+r.URL.RawQuery+" "+r.Header.Get("Authorization")+r.Header.Get("X-API-Key"))
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"data":[{"id":"a"}],"hasMore":true,"nextCursor":"c2"}`))
	}))
	defer srv.Close()
	c, _ := clientFor(t, srv)
	ctx := context.Background()
	since := time.Date(2026, 1, 2, 3, 4, 5, 6e6, time.FixedZone("x", 3600))
	p, err := c.Fetch(ctx, consumer.Conversations, consumer.Query{UpdatedSince: since, Limit: 5, Cursor: "c1"})
	require.NoError(t, err)
	require.Equal(t, consumer.Page{Records: p.Records, HasMore: true, NextCursor: "c2", Paginated: true}, p)
	require.JSONEq(t, `{"id":"a"}`, string(p.Records[0]))
	_, err = c.Fetch(ctx, consumer.Events, consumer.Query{OccurredAfter: since})
	require.NoError(t, err)
	_, err = c.Fetch(ctx, consumer.Usage, consumer.Query{StartAt: since, EndAt: since.Add(time.Hour), Granularity: "hour", GroupBy: []string{"model", "userId"}})
	require.NoError(t, err)
	k, _ := clientFor(t, srv, func(c *consumer.ClientConfig) { c.APIKeyHeader = true })
	_, err = k.Get(ctx, consumer.Conversations, "a/b c")
	require.NoError(t, err)
	require.Equal(t, []string{
		"/api/conversations?cursor=c1&limit=5&updatedSince=2026-01-02T02%3A04%3A05.006Z Bearer tok",
		"/api/events?occurredAfter=2026-01-02T02%3A04%3A05.006Z Bearer tok",
		"/api/usage?endAt=2026-01-02T03%3A04%3A05.006Z&granularity=hour&groupBy=model%2CuserId&startAt=2026-01-02T02%3A04%3A05.006Z Bearer tok",
		"/api/conversations/a/b c? tok",
	}, got)
}

func TestClientRetriesAndHonoursRetryAfter(t *testing.T) {
	t.Parallel()
	var n atomic.Int32
	answers := []func(w http.ResponseWriter){
		func(w http.ResponseWriter) { w.Header().Set("Retry-After", "7"); w.WriteHeader(429) },
		func(w http.ResponseWriter) { w.WriteHeader(502) },
		func(w http.ResponseWriter) { // a cut body
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(`{"data":[{"id":"a"`))
		},
		func(w http.ResponseWriter) {
			w.Header().Set("Retry-After", "Wed, 21 Oct 2015 07:28:00 GMT")
			w.WriteHeader(503)
		},
		func(w http.ResponseWriter) { // a connection reset
			conn, _, _ := w.(http.Hijacker).Hijack()
			_ = conn.Close()
		},
		func(w http.ResponseWriter) {
			w.Header().Set("Content-Encoding", "gzip")
			gz := gzip.NewWriter(w)
			_, _ = gz.Write([]byte(`{"data":[{"id":"a"}],"hasMore":false,"nextCursor":null}`))
			_ = gz.Close()
		},
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		answers[n.Add(1)-1](w)
	}))
	defer srv.Close()
	var retries []consumer.Retry
	c, waits := clientFor(t, srv, func(c *consumer.ClientConfig) {
		c.MinBackoff, c.MaxBackoff = 10*time.Millisecond, 80*time.Millisecond
		c.OnRetry = func(r consumer.Retry) { retries = append(retries, r) }
	})
	p, err := c.Fetch(context.Background(), consumer.Assistants, consumer.Query{})
	require.NoError(t, err)
	require.Len(t, p.Records, 1)
	require.False(t, p.HasMore)
	// The reset may be retried by net/http itself (a GET on a reused
	// connection that closed before answering), or by the client.
	require.GreaterOrEqual(t, len(*waits), 4)
	require.Equal(t, 7*time.Second, (*waits)[0], "Retry-After in seconds")
	require.Equal(t, time.Duration(0), (*waits)[3], "a Retry-After date in the past")
	for _, i := range []int{1, 2} {
		require.GreaterOrEqual(t, (*waits)[i], 10*time.Millisecond)
		require.LessOrEqual(t, (*waits)[i], 80*time.Millisecond)
	}
	require.Equal(t, 429, retries[0].Status)
	require.Equal(t, 502, retries[1].Status)
	require.Equal(t, 0, retries[2].Status)
	require.Equal(t, consumer.Assistants, retries[2].Resource)
}

func TestClientGivesUpAfterMaxRetries(t *testing.T) {
	t.Parallel()
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		w.Header().Set("Content-Type", "application/problem+json")
		w.WriteHeader(503)
		_, _ = w.Write([]byte(`{"type":"about:blank","title":"Service Unavailable","status":503,"detail":"down for maintenance"}`))
	}))
	defer srv.Close()
	c, waits := clientFor(t, srv, func(c *consumer.ClientConfig) { c.MaxRetries = 3 })
	_, err := c.Fetch(context.Background(), consumer.Events, consumer.Query{})
	require.ErrorIs(t, err, provider.ErrUnavailable)
	require.Contains(t, err.Error(), "down for maintenance")
	require.Equal(t, int32(4), n.Load())
	require.Len(t, *waits, 3)
	for i := 1; i < 3; i++ { // exponential ceiling
		require.LessOrEqual(t, (*waits)[i], 250*time.Millisecond<<i)
	}
}

func TestClientMapsProblemsToKinds(t *testing.T) {
	t.Parallel()
	cases := []struct {
		status int
		kind   error
	}{
		{400, provider.ErrInvalid}, {401, provider.ErrUnauthorized}, {403, provider.ErrForbidden},
		{404, provider.ErrNotFound}, {409, provider.ErrConflict}, {501, provider.ErrUnsupported}, {418, provider.ErrInvalid},
	}
	for _, tc := range cases {
		t.Run(strconv.Itoa(tc.status), func(t *testing.T) {
			var n atomic.Int32
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				n.Add(1)
				w.Header().Set("Content-Type", "application/problem+json")
				w.WriteHeader(tc.status)
				_, _ = w.Write([]byte(`{"type":"about:blank","title":"T","status":1,"detail":"the cursor is not valid","errors":[{"field":"cursor","message":"bad"}]}`))
			}))
			c, waits := clientFor(t, srv)
			_, err := c.Fetch(context.Background(), consumer.Conversations, consumer.Query{Cursor: "x"})
			srv.Close()
			require.ErrorIs(t, err, tc.kind, "status %d", tc.status)
			require.Contains(t, err.Error(), "the cursor is not valid")
			var pe *provider.Error
			require.True(t, errors.As(err, &pe))
			require.Equal(t, "cursor", pe.Field)
			require.Equal(t, int32(1), n.Load(), "status %d is not retried", tc.status)
			require.Empty(t, *waits)
		})
	}
}

func TestClientEnvelopes(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		body string
		want consumer.Page
		err  string
	}{
		{"bare array", `[{"id":"a"},{"id":"b"}]`, consumer.Page{}, ""},
		{"data only", `{"data":[]}`, consumer.Page{}, ""},
		{"last page", `{"data":[],"hasMore":false,"nextCursor":null}`, consumer.Page{Paginated: true}, ""},
		{"no data", `{"hasMore":false}`, consumer.Page{}, `no "data" array`},
		{"items not objects", `{"data":[1,null,{"id":"a"}]}`, consumer.Page{}, ""},
		{"nextCursor without hasMore", `{"data":[{"id":"a"}],"nextCursor":"c"}`, consumer.Page{Paginated: true, HasMore: true, NextCursor: "c"}, ""},
		{"data an object", `{"data":{}}`, consumer.Page{}, "not complete JSON"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				_, _ = w.Write([]byte(tc.body))
			}))
			c, _ := clientFor(t, srv, func(c *consumer.ClientConfig) { c.MaxRetries = -1 })
			p, err := c.Fetch(context.Background(), consumer.Conversations, consumer.Query{})
			srv.Close()
			if tc.err != "" {
				require.ErrorContains(t, err, tc.err, tc.body)
				return
			}
			require.NoError(t, err, tc.body)
			require.Equal(t, tc.want.Paginated, p.Paginated, tc.body)
			require.Equal(t, tc.want.HasMore, p.HasMore, tc.body)
			require.Equal(t, tc.want.NextCursor, p.NextCursor, tc.body)
			if tc.body != `{"data":[1,null,{"id":"a"}]}` {
				require.Equal(t, strings.Count(tc.body, "{\"id\""), len(p.Records), tc.body)
			} else {
				require.Len(t, p.Records, 3, "elements that are not objects are the parser's to quarantine")
			}
		})
	}
}

func TestClientTimeoutIsRetried(t *testing.T) {
	t.Parallel()
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if n.Add(1) == 1 {
			<-r.Context().Done() // hang until the client gives up
			return
		}
		_, _ = w.Write([]byte(`{"data":[],"hasMore":false,"nextCursor":null}`))
	}))
	defer srv.Close()
	c, waits := clientFor(t, srv, func(c *consumer.ClientConfig) { c.Timeout = 100 * time.Millisecond })
	_, err := c.Fetch(context.Background(), consumer.Conversations, consumer.Query{})
	require.NoError(t, err)
	require.Len(t, *waits, 1)
}

func TestNewClientValidates(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name string
		cfg  consumer.ClientConfig
	}{
		{"empty", consumer.ClientConfig{}},
		{"ftp URL", consumer.ClientConfig{URL: "ftp://x"}},
		{"URL without host", consumer.ClientConfig{URL: "http://"}},
		{"URL with a query", consumer.ClientConfig{URL: "http://x?a=1"}},
		{"token with a newline", consumer.ClientConfig{URL: "http://x", Token: "a\nb"}},
		{"negative timeout", consumer.ClientConfig{URL: "http://x", Timeout: -1}},
		{"backoff bounds reversed", consumer.ClientConfig{URL: "http://x", MinBackoff: time.Second, MaxBackoff: time.Millisecond}},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := consumer.NewClient(c.cfg)
			require.Error(t, err, "%+v", c.cfg)
		})
	}
}

// TestClientBoundsWhatItKeeps: a body past MaxBody is not downloaded
// again, and a provider's problem detail is cut at 1 KiB in the error.
func TestClientBoundsWhatItKeeps(t *testing.T) {
	t.Parallel()
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		if strings.HasSuffix(r.URL.Path, "/events") {
			_, _ = w.Write([]byte(`{"data":[` + strings.Repeat(`{},`, 4000) + `{}],"hasMore":false,"nextCursor":null}`))
			return
		}
		w.Header().Set("Content-Type", "application/problem+json")
		w.WriteHeader(400)
		_, _ = w.Write([]byte(`{"type":"about:blank","title":"Bad Request","status":400,"detail":"` + strings.Repeat("z", 1<<20) + `"}`))
	}))
	defer srv.Close()
	c, _ := clientFor(t, srv, func(c *consumer.ClientConfig) { c.MaxBody, c.MaxRetries = 1024, 3 })
	_, err := c.Fetch(context.Background(), consumer.Events, consumer.Query{})
	require.ErrorContains(t, err, "more than 1024 bytes")
	require.Equal(t, int32(1), n.Load(), "a body past MaxBody is not downloaded again")

	c, _ = clientFor(t, srv, func(c *consumer.ClientConfig) { c.MaxRetries = 0 })
	_, err = c.Fetch(context.Background(), consumer.Conversations, consumer.Query{})
	require.ErrorIs(t, err, provider.ErrInvalid)
	require.Less(t, len(err.Error()), 2<<10, "the detail is cut")
}
