package faultproxy

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// listen starts a proxy in front of tg and closes it with the test.
func listen(t *testing.T, tg *target, cfg Config) *Server {
	t.Helper()
	cfg.Target = tg.url(t)
	srv, err := Listen(cfg)
	require.NoError(t, err)
	t.Cleanup(srv.Close)
	return srv
}

// newClient returns a client with a transport of its own, so that no test
// reuses another's connections.
func newClient(t *testing.T, configure func(*http.Transport)) *http.Client {
	t.Helper()
	tr := &http.Transport{}
	if configure != nil {
		configure(tr)
	}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr, Timeout: 10 * time.Second}
}

func noKeepAlive(tr *http.Transport) { tr.DisableKeepAlives = true }

func rawBodies(tr *http.Transport) { tr.DisableCompression = true }

// get sends a GET with the given headers and reads the whole body.
func get(t *testing.T, c *http.Client, u string, hdr map[string]string) (*http.Response, []byte, error) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, u, nil)
	require.NoError(t, err)
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := c.Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp, b, err
}

func TestNewValidates(t *testing.T) {
	t.Parallel()
	good, err := url.Parse("http://127.0.0.1:1")
	require.NoError(t, err)
	tests := []struct {
		name string
		cfg  Config
		want string // in the error; "" for none
	}{
		{"valid", Config{Target: good, Faults: Faults{Error5xx: 1, Truncate: 0.5}}, ""},
		{"no target", Config{}, "Config.Target is required"},
		{"bad scheme", Config{Target: &url.URL{Scheme: "ftp", Host: "x"}}, "scheme must be http or https"},
		{"no host", Config{Target: &url.URL{Scheme: "http"}}, "has no host"},
		{"negative", Config{Target: good, Faults: Faults{Error5xx: -0.1}}, "Faults.Error5xx"},
		{"above one", Config{Target: good, Faults: Faults{RateLimit: 1.5}}, "Faults.RateLimit"},
		{"NaN", Config{Target: good, Faults: Faults{Truncate: math.NaN()}}, "Faults.Truncate"},
		{"negative HangFor", Config{Target: good, HangFor: -time.Second}, "Config.HangFor"},
		{"negative After", Config{Target: good, After: -1}, "Config.After"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p, err := New(tt.cfg)
			if tt.want == "" {
				require.NoError(t, err)
				require.NotNil(t, p)
				return
			}
			require.ErrorContains(t, err, tt.want)
			require.Nil(t, p)
		})
	}
}

func TestSetFaultsPanicsOnInvalid(t *testing.T) {
	t.Parallel()
	p, err := New(Config{Target: &url.URL{Scheme: "http", Host: "127.0.0.1:1"}})
	require.NoError(t, err)
	require.PanicsWithError(t, "faultproxy: Faults.Hang is 2, want a probability in [0,1]", func() { p.SetFaults(Faults{Hang: 2}) })
}

// TestForwardFaithfully compares the answer through a proxy with zero
// probabilities to the target's own, byte for byte, and what the target
// receives either way.
func TestForwardFaithfully(t *testing.T) {
	t.Parallel()
	tg := newTarget(t)
	srv := listen(t, tg, Config{Seed: 1})
	auth := map[string]string{"Authorization": "Bearer s3cret", "X-API-Key": "key-123"}
	tests := []struct {
		name   string
		path   string
		hdr    map[string]string
		client func(*http.Transport)
		status int
	}{
		{"list page", "/conversations", auth, rawBodies, http.StatusOK},
		{"list with cursor", "/usage?limit=7&cursor=o14&x=%2Fa+b%26c", auth, rawBodies, http.StatusOK},
		{"bad cursor", "/assistants?cursor=zzz", auth, rawBodies, http.StatusBadRequest},
		{"record", "/assistants/a-0003", auth, rawBodies, http.StatusOK},
		{"not found", "/conversations/c-9999", auth, rawBodies, http.StatusNotFound},
		{"escaped path", "/conversations/a%2Fb", auth, rawBodies, http.StatusNotFound},
		{"unknown route", "/nope", nil, rawBodies, http.StatusNotFound},
		{"raw gzip", "/conversations?limit=30", map[string]string{"Accept-Encoding": "gzip", "X-API-Key": "k"}, rawBodies, http.StatusOK},
		{"transparent gzip", "/events?limit=5", auth, nil, http.StatusOK},
		{"streamed", "/events", auth, rawBodies, http.StatusOK},
		{"user agent", "/usage", map[string]string{"User-Agent": "consumer/1.0", "Accept": "application/json"}, rawBodies, http.StatusOK},
	}
	t.Cleanup(func() {
		// After the parallel subtests.
		require.Equal(t, Stats{Requests: len(tests), Passed: len(tests)}, srv.Proxy.Stats())
	})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := newClient(t, tt.client)
			fetch := func(base, trace string) (*http.Response, []byte) {
				hdr := map[string]string{"X-Trace": trace}
				for k, v := range tt.hdr {
					hdr[k] = v
				}
				resp, body, err := get(t, c, base+tt.path, hdr)
				require.NoError(t, err)
				return resp, body
			}
			direct, directBody := fetch(tg.URL, tt.name+"/direct")
			proxied, proxiedBody := fetch(srv.URL, tt.name+"/proxied")

			require.Equal(t, tt.status, direct.StatusCode)
			require.Equal(t, direct.StatusCode, proxied.StatusCode)
			require.Equal(t, directBody, proxiedBody)
			require.Equal(t, direct.ContentLength, proxied.ContentLength)
			require.Equal(t, direct.Uncompressed, proxied.Uncompressed)
			dh, ph := direct.Header.Clone(), proxied.Header.Clone()
			dh.Del("Date")
			ph.Del("Date")
			require.Equal(t, dh, ph)

			in, out := tg.request(tt.name+"/direct"), tg.request(tt.name+"/proxied")
			require.NotNil(t, in)
			require.NotNil(t, out)
			require.Equal(t, in.Method, out.Method)
			require.Equal(t, in.RequestURI, out.RequestURI)
			for _, k := range []string{"Authorization", "X-Api-Key", "Accept-Encoding", "Accept", "User-Agent"} {
				require.Equal(t, in.Header.Values(k), out.Header.Values(k), k)
			}
		})
	}
}

func TestError5xx(t *testing.T) {
	t.Parallel()
	tg := newTarget(t)
	srv := listen(t, tg, Config{Seed: 7, Faults: Faults{Error5xx: 1}})
	c := newClient(t, nil)
	const n = 60
	seen := map[int]bool{}
	plain, problems, retryAfter := 0, 0, 0
	for i := range n {
		trace := "r" + strconv.Itoa(i)
		resp, body, err := get(t, c, srv.URL+"/conversations", map[string]string{"X-Trace": trace})
		require.NoError(t, err)
		seen[resp.StatusCode] = true
		require.Contains(t, []int{500, 502, 503}, resp.StatusCode)
		require.NotEmpty(t, body)
		require.Less(t, len(body), 512)
		if ra := resp.Header.Get("Retry-After"); ra != "" {
			require.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)
			require.Contains(t, []string{"0", "1"}, ra)
			retryAfter++
		}
		switch ct := resp.Header.Get("Content-Type"); ct {
		case problemContentType:
			var p problem
			require.NoError(t, json.Unmarshal(body, &p))
			require.Equal(t, resp.StatusCode, p.Status)
			require.Equal(t, "about:blank", p.Type)
			problems++
		case "text/plain; charset=utf-8":
			require.Contains(t, string(body), strconv.Itoa(resp.StatusCode))
			plain++
		default:
			t.Fatalf("Content-Type %q", ct)
		}
		require.Nil(t, tg.request(trace), "a 5xx fault must not reach the target")
	}
	require.Len(t, seen, 3, "500, 502 and 503 all appear")
	require.Positive(t, plain)
	require.Positive(t, problems)
	require.Positive(t, retryAfter)
	require.Equal(t, Stats{Requests: n, Error5xx: n}, srv.Proxy.Stats())
}

func TestRateLimit(t *testing.T) {
	t.Parallel()
	tg := newTarget(t)
	srv := listen(t, tg, Config{Seed: 3, Faults: Faults{RateLimit: 1}})
	c := newClient(t, nil)
	const n = 20
	after := map[string]bool{}
	for range n {
		resp, body, err := get(t, c, srv.URL+"/usage?cursor=o20", nil)
		require.NoError(t, err)
		require.Equal(t, http.StatusTooManyRequests, resp.StatusCode)
		require.Equal(t, problemContentType, resp.Header.Get("Content-Type"))
		ra := resp.Header.Get("Retry-After")
		require.Contains(t, []string{"0", "1"}, ra)
		after[ra] = true
		var p problem
		require.NoError(t, json.Unmarshal(body, &p))
		require.Equal(t, problem{Type: "about:blank", Title: "Too Many Requests", Status: 429,
			Detail: "Rate limit exceeded; retry after " + ra + " s.", Instance: "/usage"}, p)
	}
	require.Len(t, after, 2, "both Retry-After values appear")
	require.Equal(t, Stats{Requests: n, RateLimit: n}, srv.Proxy.Stats())
}

func TestReset(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		after  int
		client func(*http.Transport)
	}{
		{"fresh connection", 0, nil},
		// The first request passes; the second meets a reset on the reused
		// connection, which Go's transport retries once, into another reset.
		{"reused connection", 1, nil},
		{"no keep-alive", 0, noKeepAlive},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tg := newTarget(t)
			srv := listen(t, tg, Config{Seed: 5, After: tt.after, Faults: Faults{Reset: 1}})
			c := newClient(t, tt.client)
			for range tt.after {
				resp, _, err := get(t, c, srv.URL+"/conversations", nil)
				require.NoError(t, err)
				require.Equal(t, http.StatusOK, resp.StatusCode)
			}
			resp, _, err := get(t, c, srv.URL+"/conversations", map[string]string{"X-Trace": "reset"})
			require.Error(t, err)
			require.Nil(t, resp)
			var ne net.Error
			require.False(t, errors.As(err, &ne) && ne.Timeout(), "a reset is not a timeout: %v", err)
			require.Nil(t, tg.request("reset"))
			st := srv.Proxy.Stats()
			require.Equal(t, tt.after, st.Passed)
			require.GreaterOrEqual(t, st.Reset, 1)
			require.Equal(t, st.Requests, st.Passed+st.Reset)
		})
	}
}

func TestHang(t *testing.T) {
	t.Parallel()
	t.Run("client timeout", func(t *testing.T) {
		t.Parallel()
		tg := newTarget(t)
		srv := listen(t, tg, Config{Faults: Faults{Hang: 1}, HangFor: time.Hour})
		c := newClient(t, nil)
		c.Timeout = 150 * time.Millisecond
		start := time.Now()
		_, _, err := get(t, c, srv.URL+"/conversations", map[string]string{"X-Trace": "hang"})
		require.Error(t, err)
		var ne net.Error
		require.True(t, errors.As(err, &ne) && ne.Timeout(), "want a timeout, got %v", err)
		require.Less(t, time.Since(start), 5*time.Second)
		require.Nil(t, tg.request("hang"))
		require.Equal(t, Stats{Requests: 1, Hang: 1}, srv.Proxy.Stats())
	})
	t.Run("context deadline", func(t *testing.T) {
		t.Parallel()
		tg := newTarget(t)
		srv := listen(t, tg, Config{Faults: Faults{Hang: 1}, HangFor: time.Hour})
		ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
		defer cancel()
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+"/usage", nil)
		require.NoError(t, err)
		_, err = newClient(t, nil).Do(req)
		require.ErrorIs(t, err, context.DeadlineExceeded)
	})
	t.Run("HangFor elapses", func(t *testing.T) {
		t.Parallel()
		tg := newTarget(t)
		srv := listen(t, tg, Config{Faults: Faults{Hang: 1}, HangFor: 100 * time.Millisecond})
		start := time.Now()
		_, _, err := get(t, newClient(t, nil), srv.URL+"/conversations", nil)
		require.Error(t, err)
		var ne net.Error
		require.False(t, errors.As(err, &ne) && ne.Timeout(), "the proxy closes, the client does not time out: %v", err)
		require.GreaterOrEqual(t, time.Since(start), 100*time.Millisecond)
		require.Equal(t, 1, srv.Proxy.Stats().Hang)
	})
	t.Run("handler returns when the client gives up", func(t *testing.T) {
		t.Parallel()
		tg := newTarget(t)
		p, err := New(Config{Target: tg.url(t), Faults: Faults{Hang: 1}, HangFor: time.Hour})
		require.NoError(t, err)
		returned := make(chan struct{})
		front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			defer close(returned)
			p.ServeHTTP(w, r)
		}))
		t.Cleanup(front.Close)
		c := newClient(t, nil)
		c.Timeout = 100 * time.Millisecond
		_, _, err = get(t, c, front.URL+"/conversations", nil)
		require.Error(t, err)
		select {
		case <-returned:
		case <-time.After(5 * time.Second):
			t.Fatal("the hanging handler did not return after the client gave up")
		}
	})
}

// TestTruncate checks that every truncated body fails the client, whether it
// reads to the end or decodes one JSON value, with and without gzip.
func TestTruncate(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		path    string
		hdr     map[string]string
		client  func(*http.Transport)
		status  int
		gzipped bool // the client sees gzip bytes
	}{
		{"identity", "/conversations", nil, rawBodies, http.StatusOK, false},
		{"identity small page", "/usage?limit=1&cursor=o3", nil, rawBodies, http.StatusOK, false},
		{"identity 404", "/assistants/a-9999", nil, rawBodies, http.StatusNotFound, false},
		{"streamed by target", "/events", nil, rawBodies, http.StatusOK, false},
		{"transparent gzip", "/conversations", nil, nil, http.StatusOK, false},
		{"transparent gzip small", "/assistants/a-0001", nil, nil, http.StatusOK, false},
		{"raw gzip", "/conversations?limit=40", map[string]string{"Accept-Encoding": "gzip"}, rawBodies, http.StatusOK, true},
		{"raw gzip small", "/assistants/a-0002", map[string]string{"Accept-Encoding": "gzip"}, rawBodies, http.StatusOK, true},
	}
	const n = 25
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tg := newTarget(t)
			srv := listen(t, tg, Config{Seed: int64(len(tt.name)), Faults: Faults{Truncate: 1}})
			c := newClient(t, tt.client)

			full, fullBody, err := get(t, c, tg.URL+tt.path, tt.hdr)
			require.NoError(t, err)
			require.Equal(t, tt.status, full.StatusCode)
			lengths := map[int]bool{}
			for i := range n {
				req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, srv.URL+tt.path, nil)
				require.NoError(t, err)
				for k, v := range tt.hdr {
					req.Header.Set(k, v)
				}
				resp, err := c.Do(req)
				require.NoError(t, err)
				require.Equal(t, tt.status, resp.StatusCode)
				require.Equal(t, full.Header.Get("Content-Type"), resp.Header.Get("Content-Type"))
				require.Equal(t, full.Header.Get("ETag"), resp.Header.Get("ETag"))
				if i%2 == 0 {
					// A client that reads to the end.
					got, err := io.ReadAll(resp.Body)
					require.ErrorIs(t, err, io.ErrUnexpectedEOF)
					require.Less(t, len(got), len(fullBody))
					lengths[len(got)] = true
					if tt.gzipped {
						_, zerr := gunzip(got)
						require.Error(t, zerr)
					} else {
						require.False(t, json.Valid(got), "%q", got)
						require.True(t, bytes.HasPrefix(fullBody, got))
					}
				} else if !tt.gzipped {
					// A client that decodes one value and stops.
					var v map[string]any
					require.Error(t, json.NewDecoder(resp.Body).Decode(&v))
				}
				require.NoError(t, resp.Body.Close())
			}
			require.Greater(t, len(lengths), 1, "cut points vary")
			require.Equal(t, Stats{Requests: n, Truncate: n}, srv.Proxy.Stats())
		})
	}
}

func TestTruncateEmptyBody(t *testing.T) {
	t.Parallel()
	tg := newTarget(t)
	srv := listen(t, tg, Config{Faults: Faults{Truncate: 1}})
	req, err := http.NewRequestWithContext(t.Context(), http.MethodHead, srv.URL+"/conversations", nil)
	require.NoError(t, err)
	_, err = newClient(t, noKeepAlive).Do(req)
	require.Error(t, err, "an empty body cannot be cut: no answer at all")
	require.Equal(t, 1, srv.Proxy.Stats().Truncate)
}

func TestCutPoint(t *testing.T) {
	t.Parallel()
	var gz bytes.Buffer
	writeGzip(t, &gz, `{"data":[{"id":"x"}],"hasMore":false,"nextCursor":null}`+"\n\n")
	tests := []struct {
		name     string
		body     []byte
		encoding string
		max      int // the cut is at most this
	}{
		{"trailing blanks not counted", []byte("{\"a\":1}\n \r\n"), "", 6},
		{"one byte", []byte("{"), "", 0},
		{"all blank", []byte(" \n"), "", 0},
		{"identity spelled out", []byte(`[1,2]`), "Identity", 4},
		{"unknown encoding", []byte("0123456789"), "br", 5},
		{"gzip", gz.Bytes(), "gzip", gz.Len() - 1},
		{"not really gzip", []byte("{}\n"), "gzip", 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			for seed := range uint64(200) {
				n := cutPoint(tt.body, tt.encoding, rngFor(seed))
				require.GreaterOrEqual(t, n, 0)
				require.LessOrEqual(t, n, tt.max)
				if tt.encoding == "gzip" && tt.name == "gzip" {
					got, _ := gunzip(tt.body[:n])
					require.False(t, json.Valid(got), "%q", got)
				}
			}
		})
	}
}

func TestRejectCursorOnce(t *testing.T) {
	t.Parallel()
	t.Run("sequence", func(t *testing.T) {
		t.Parallel()
		tg := newTarget(t)
		srv := listen(t, tg, Config{RejectCursorOnce: true})
		c := newClient(t, nil)
		steps := []struct {
			path   string
			status int
		}{
			{"/conversations", http.StatusOK},
			{"/conversations?cursor=", http.StatusOK}, // empty: no cursor
			{"/conversations?cursor=o20", http.StatusBadRequest},
			{"/conversations?cursor=o20", http.StatusOK},
			{"/assistants?cursor=o20", http.StatusOK},
		}
		for i, s := range steps {
			resp, body, err := get(t, c, srv.URL+s.path, nil)
			require.NoError(t, err)
			require.Equal(t, s.status, resp.StatusCode, "step %d", i)
			if s.status == http.StatusBadRequest {
				require.Equal(t, problemContentType, resp.Header.Get("Content-Type"))
				require.JSONEq(t, `{"type":"about:blank","title":"Bad Request","status":400,"detail":"The cursor is not valid.","instance":"/conversations"}`, string(body))
			} else {
				require.True(t, json.Valid(body))
			}
		}
		require.Equal(t, Stats{Requests: 5, Passed: 4, RejectCursor: 1}, srv.Proxy.Stats())
	})
	t.Run("concurrent", func(t *testing.T) {
		t.Parallel()
		tg := newTarget(t)
		srv := listen(t, tg, Config{RejectCursorOnce: true})
		c := newClient(t, nil)
		const n = 20
		statuses := make(chan int, n)
		var wg sync.WaitGroup
		for range n {
			wg.Go(func() {
				resp, _, err := get(t, c, srv.URL+"/events?cursor=o5", nil)
				if err != nil {
					statuses <- -1
					return
				}
				statuses <- resp.StatusCode
			})
		}
		wg.Wait()
		close(statuses)
		count := map[int]int{}
		for s := range statuses {
			count[s]++
		}
		require.Equal(t, map[int]int{http.StatusOK: n - 1, http.StatusBadRequest: 1}, count)
	})
}

func TestOnlyAfterAndSetFaults(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		cfg  Config
		// run sends the requests and returns their status codes.
		paths []string
		set   *Faults // applied after the first half of paths
		want  []int
	}{
		{
			name:  "After",
			cfg:   Config{After: 3, Faults: Faults{RateLimit: 1}},
			paths: []string{"/usage", "/usage", "/usage", "/usage", "/usage"},
			want:  []int{200, 200, 200, 429, 429},
		},
		{
			name: "Only",
			cfg: Config{Faults: Faults{RateLimit: 1}, Only: func(r *http.Request) bool {
				return r.URL.Path == "/conversations"
			}},
			paths: []string{"/conversations", "/usage", "/conversations/c-0001", "/conversations?cursor=o20"},
			want:  []int{429, 200, 200, 429},
		},
		{
			name:  "After counts requests Only exempts",
			cfg:   Config{After: 2, Faults: Faults{RateLimit: 1}, Only: func(r *http.Request) bool { return r.URL.Path == "/events" }},
			paths: []string{"/usage", "/usage", "/events", "/usage"},
			want:  []int{200, 200, 429, 200},
		},
		{
			name:  "After delays RejectCursorOnce",
			cfg:   Config{After: 2, RejectCursorOnce: true},
			paths: []string{"/usage?cursor=o20", "/usage?cursor=o20", "/usage?cursor=o20", "/usage?cursor=o20"},
			want:  []int{200, 200, 400, 200},
		},
		{
			name:  "SetFaults off",
			cfg:   Config{Faults: Faults{Error5xx: 1}},
			paths: []string{"/usage", "/usage", "/usage", "/usage"},
			set:   &Faults{},
			want:  []int{0, 0, 200, 200}, // 0: any 5xx
		},
		{
			name:  "SetFaults on",
			cfg:   Config{},
			paths: []string{"/usage", "/usage", "/usage", "/usage"},
			set:   &Faults{RateLimit: 1},
			want:  []int{200, 200, 429, 429},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tg := newTarget(t)
			srv := listen(t, tg, tt.cfg)
			c := newClient(t, nil)
			for i, path := range tt.paths {
				if tt.set != nil && i == len(tt.paths)/2 {
					srv.Proxy.SetFaults(*tt.set)
				}
				resp, _, err := get(t, c, srv.URL+path, nil)
				require.NoError(t, err)
				if tt.want[i] == 0 {
					require.GreaterOrEqual(t, resp.StatusCode, 500, "request %d", i)
					continue
				}
				require.Equal(t, tt.want[i], resp.StatusCode, "request %d", i)
			}
		})
	}
}

// outcome describes what a client saw, leaving out what varies between runs
// (ports in error messages).
func outcome(t *testing.T, c *http.Client, u string) string {
	t.Helper()
	resp, body, err := get(t, c, u, nil)
	switch {
	case resp == nil:
		return "transport error"
	case err != nil:
		return "truncated " + strconv.Itoa(len(body))
	default:
		return strconv.Itoa(resp.StatusCode) + " " + resp.Header.Get("Retry-After") + " " + resp.Header.Get("Content-Type")
	}
}

func TestSeedIsDeterministic(t *testing.T) {
	t.Parallel()
	tg := newTarget(t)
	faults := Faults{Error5xx: 0.2, RateLimit: 0.2, Reset: 0.2, Truncate: 0.2}
	run := func(seed int64) ([]string, Stats) {
		srv := listen(t, tg, Config{Seed: seed, Faults: faults, RejectCursorOnce: true})
		c := newClient(t, noKeepAlive) // no retries of reused connections
		var got []string
		for i := range 40 {
			got = append(got, outcome(t, c, srv.URL+"/conversations?cursor=o"+strconv.Itoa(i%listSize)))
		}
		return got, srv.Proxy.Stats()
	}
	a, sa := run(11)
	b, sb := run(11)
	other, _ := run(12)
	require.Equal(t, a, b)
	require.Equal(t, sa, sb)
	require.NotEqual(t, a, other)
	require.Positive(t, sa.Passed)
	require.Positive(t, sa.Error5xx)
	require.Positive(t, sa.RateLimit)
	require.Positive(t, sa.Reset)
	require.Positive(t, sa.Truncate)
	require.Equal(t, 1, sa.RejectCursor)
}

// TestStatsUnderLoad sends requests from many goroutines and checks that
// Stats agrees with what the clients saw.
func TestStatsUnderLoad(t *testing.T) {
	t.Parallel()
	tg := newTarget(t)
	srv := listen(t, tg, Config{Seed: 99, Faults: Faults{Error5xx: 0.15, RateLimit: 0.15, Reset: 0.15, Truncate: 0.15}})
	c := newClient(t, noKeepAlive)
	const workers, each = 8, 25
	var (
		mu   sync.Mutex
		seen Stats
		wg   sync.WaitGroup
	)
	for range workers {
		wg.Go(func() {
			for range each {
				resp, body, err := get(t, c, srv.URL+"/conversations?limit=10", nil)
				mu.Lock()
				seen.Requests++
				switch {
				case resp == nil:
					seen.Reset++
				case err != nil:
					seen.Truncate++
				case resp.StatusCode == http.StatusTooManyRequests:
					seen.RateLimit++
				case resp.StatusCode >= 500:
					seen.Error5xx++
				case resp.StatusCode == http.StatusOK && json.Valid(body):
					seen.Passed++
				}
				mu.Unlock()
				_ = srv.Proxy.Stats() // concurrent reads
			}
		})
	}
	wg.Wait()
	st := srv.Proxy.Stats()
	require.Equal(t, seen, st)
	require.Equal(t, workers*each, st.Requests)
	require.Equal(t, st.Requests-st.Passed, st.Faulted())
	for name, v := range map[string]int{"Error5xx": st.Error5xx, "RateLimit": st.RateLimit, "Reset": st.Reset, "Truncate": st.Truncate} {
		require.Positive(t, v, name)
	}
}

func TestTargetBasePath(t *testing.T) {
	t.Parallel()
	tg := newTarget(t)
	base := tg.url(t)
	base.Path = "/api"
	inner := http.StripPrefix("/api", tg.Config.Handler)
	front := httptest.NewServer(inner)
	t.Cleanup(front.Close)
	u, err := url.Parse(front.URL + "/api")
	require.NoError(t, err)
	srv, err := Listen(Config{Target: u})
	require.NoError(t, err)
	t.Cleanup(srv.Close)
	resp, body, err := get(t, newClient(t, nil), srv.URL+"/conversations?cursor=o40", map[string]string{"X-Trace": "base"})
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.True(t, strings.Contains(string(body), `"hasMore":false`))
	require.Equal(t, "/conversations?cursor=o40", tg.request("base").URL.RequestURI())
}
