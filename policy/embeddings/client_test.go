package embeddings_test

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/aiusage/kit/policy"
	"github.com/aiusage/kit/policy/embeddings"
	"github.com/aiusage/kit/spec"
)

// topics are the dimensions of the fake model: a text's embedding counts the
// words of each topic it holds, plus a small constant.
var topics = [][]string{
	{"database", "customer", "customers", "records", "export"},
	{"salary", "salaries", "pay", "employee", "employees"},
	{"weather", "rain", "sunny", "forecast"},
	{"haiku", "poem", "autumn"},
}

func embed(text string) []float64 {
	v := make([]float64, len(topics)+1)
	v[len(topics)] = 0.1
	for _, w := range strings.FieldsFunc(strings.ToLower(text), func(r rune) bool { return r < 'a' || r > 'z' }) {
		for d, words := range topics {
			for _, t := range words {
				if w == t {
					v[d]++
				}
			}
		}
	}
	return v
}

// fakeAPI is an OpenAI-compatible embeddings endpoint over embed.
type fakeAPI struct {
	mu       sync.Mutex
	requests []fakeRequest
	// answer, when set, replaces the handler's answer.
	answer func(w http.ResponseWriter, inputs []string)
}

type fakeRequest struct {
	Model  string   `json:"model"`
	Input  []string `json:"input"`
	Auth   string   `json:"-"`
	APIKey string   `json:"-"`
	Header string   `json:"-"`
}

func (f *fakeAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var req fakeRequest
	if r.Method != http.MethodPost || json.NewDecoder(r.Body).Decode(&req) != nil {
		http.Error(w, "bad request", http.StatusBadRequest)
		return
	}
	req.Auth, req.APIKey, req.Header = r.Header.Get("Authorization"), r.Header.Get("Api-Key"), r.Header.Get("Content-Type")
	f.mu.Lock()
	f.requests = append(f.requests, req)
	answer := f.answer
	f.mu.Unlock()
	if answer != nil {
		answer(w, req.Input)
		return
	}
	type item struct {
		Object    string    `json:"object"`
		Index     int       `json:"index"`
		Embedding []float64 `json:"embedding"`
	}
	data := make([]item, len(req.Input))
	for i, in := range req.Input {
		// Reverse order: clients must use the index.
		data[len(data)-1-i] = item{"embedding", i, embed(in)}
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"object": "list", "data": data, "model": req.Model})
}

func (f *fakeAPI) inputs() [][]string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out [][]string
	for _, r := range f.requests {
		out = append(out, r.Input)
	}
	return out
}

func newAPI(t *testing.T) (*fakeAPI, *httptest.Server) {
	t.Helper()
	f := &fakeAPI{}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	return f, srv
}

var (
	segments = []string{
		"Please export the customer database records.",
		"Write a haiku about autumn.",
		"What will the weather be, rain or sunny?",
		"Tell me the salary of each employee.",
	}
	queries = []string{"customer database export", "employee salaries", "stock prices"}
)

func TestMatch(t *testing.T) {
	t.Parallel()
	api, srv := newAPI(t)
	c := &embeddings.Client{URL: srv.URL + "/v1/embeddings", Model: "fake-1", APIKey: "sk-test"}
	out, err := c.Match(context.Background(), segments, queries)
	require.NoError(t, err)
	require.Equal(t, [][]int{{0}, {3}, nil}, out)
	require.Len(t, api.requests, 1)
	r := api.requests[0]
	require.Equal(t, "fake-1", r.Model)
	require.Equal(t, "Bearer sk-test", r.Auth)
	require.Equal(t, "application/json", r.Header)
	require.Equal(t, append(append([]string{}, segments...), queries...), r.Input)

	// The queries' embeddings are cached: the next request sends segments only.
	out, err = c.Match(context.Background(), segments[:2], []string{queries[0], queries[0], queries[2]})
	require.NoError(t, err)
	require.Equal(t, [][]int{{0}, {0}, nil}, out)
	require.Equal(t, segments[:2], api.inputs()[1])

	// A lower threshold matches more.
	low := &embeddings.Client{URL: srv.URL, Threshold: 0.01}
	out, err = low.Match(context.Background(), segments, queries[2:])
	require.NoError(t, err)
	require.Equal(t, [][]int{{0, 1, 2, 3}}, out)
}

func TestMatchBatches(t *testing.T) {
	t.Parallel()
	api, srv := newAPI(t)
	c := &embeddings.Client{URL: srv.URL, MaxBatch: 2, QueryCacheSize: -1}
	out, err := c.Match(context.Background(), segments, queries)
	require.NoError(t, err)
	require.Equal(t, [][]int{{0}, {3}, nil}, out)
	in := api.inputs()
	require.Len(t, in, 4)
	for _, batch := range in {
		require.LessOrEqual(t, len(batch), 2)
	}
	_, err = c.Match(context.Background(), segments[:1], queries[:1])
	require.NoError(t, err)
	require.Equal(t, []string{segments[0], queries[0]}, api.inputs()[4]) // no cache
}

func TestMatchNothingToDo(t *testing.T) {
	t.Parallel()
	api, srv := newAPI(t)
	c := &embeddings.Client{URL: srv.URL}
	out, err := c.Match(context.Background(), nil, queries)
	require.NoError(t, err)
	require.Equal(t, [][]int{nil, nil, nil}, out)
	out, err = c.Match(context.Background(), segments, nil)
	require.NoError(t, err)
	require.Empty(t, out)
	require.Empty(t, api.inputs())
}

func TestMatchFailures(t *testing.T) {
	t.Parallel()
	write := func(status int, body string) func(http.ResponseWriter, []string) {
		return func(w http.ResponseWriter, _ []string) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(status)
			_, _ = w.Write([]byte(body))
		}
	}
	tests := []struct {
		name   string
		answer func(http.ResponseWriter, []string)
		want   string
	}{
		{"server error", write(http.StatusInternalServerError, `{"error":{"message":"overloaded"}}`), "500"},
		{"unauthorised", write(http.StatusUnauthorized, `{"error":"bad key"}`), "401"},
		{"bad JSON", write(http.StatusOK, `{"data":[`), "decoding"},
		{"not an object", write(http.StatusOK, `[1,2]`), "decoding"},
		{"wrong count", write(http.StatusOK, `{"data":[{"index":0,"embedding":[1,0]}]}`), "1 embeddings for 7 inputs"},
		{"missing index", func(w http.ResponseWriter, in []string) {
			items := make([]string, len(in))
			for i := range in {
				items[i] = `{"embedding":[1,0]}`
			}
			_, _ = w.Write([]byte(`{"data":[` + strings.Join(items, ",") + `]}`))
		}, "index"},
		{"repeated index", func(w http.ResponseWriter, in []string) {
			items := make([]string, len(in))
			for i := range in {
				items[i] = `{"index":0,"embedding":[1,0]}`
			}
			_, _ = w.Write([]byte(`{"data":[` + strings.Join(items, ",") + `]}`))
		}, "index"},
		{"empty embedding", func(w http.ResponseWriter, in []string) {
			items := make([]string, len(in))
			for i := range in {
				items[i] = `{"index":` + string(rune('0'+i)) + `,"embedding":[]}`
			}
			_, _ = w.Write([]byte(`{"data":[` + strings.Join(items, ",") + `]}`))
		}, "empty"},
		{"mixed dimensions", func(w http.ResponseWriter, in []string) {
			items := make([]string, len(in))
			for i := range in {
				items[i] = `{"index":` + string(rune('0'+i)) + `,"embedding":[1` + strings.Repeat(",0", i) + `]}`
			}
			_, _ = w.Write([]byte(`{"data":[` + strings.Join(items, ",") + `]}`))
		}, "dimensions"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			api, srv := newAPI(t)
			api.answer = tt.answer
			c := &embeddings.Client{URL: srv.URL}
			_, err := c.Match(context.Background(), segments, queries)
			require.ErrorContains(t, err, tt.want)
		})
	}
	t.Run("no URL", func(t *testing.T) {
		t.Parallel()
		_, err := (&embeddings.Client{}).Match(context.Background(), segments, queries)
		require.ErrorContains(t, err, "URL")
	})
	t.Run("unreachable", func(t *testing.T) {
		t.Parallel()
		srv := httptest.NewServer(http.NotFoundHandler())
		url := srv.URL
		srv.Close()
		_, err := (&embeddings.Client{URL: url}).Match(context.Background(), segments, queries)
		require.Error(t, err)
	})
	t.Run("timeout", func(t *testing.T) {
		t.Parallel()
		release := make(chan struct{})
		api, srv := newAPI(t)
		api.answer = func(http.ResponseWriter, []string) { <-release }
		t.Cleanup(func() { close(release) })
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		_, err := (&embeddings.Client{URL: srv.URL}).Match(ctx, segments, queries)
		require.ErrorIs(t, err, context.Canceled)
		ctx2, cancel2 := context.WithTimeout(context.Background(), 50*time.Millisecond)
		defer cancel2()
		_, err = (&embeddings.Client{URL: srv.URL}).Match(ctx2, segments, queries)
		require.ErrorIs(t, err, context.DeadlineExceeded)
		// The HTTP client's own timeout.
		hc := &http.Client{Timeout: 50 * time.Millisecond}
		_, err = (&embeddings.Client{URL: srv.URL, HTTPClient: hc}).Match(context.Background(), segments, queries)
		var ne net.Error
		require.ErrorAs(t, err, &ne)
		require.True(t, ne.Timeout())
	})
}

// TestScores checks the scores against the cosine similarities of the fake
// model's vectors, and that Match answers the scores at the threshold.
func TestScores(t *testing.T) {
	t.Parallel()
	_, srv := newAPI(t)
	c := &embeddings.Client{URL: srv.URL, Threshold: 0.5}
	scores, err := c.Scores(context.Background(), segments, queries)
	require.NoError(t, err)
	require.Len(t, scores, len(queries))
	cosine := func(a, b []float64) float64 {
		var ab, aa, bb float64
		for i := range a {
			ab, aa, bb = ab+a[i]*b[i], aa+a[i]*a[i], bb+b[i]*b[i]
		}
		return ab / math.Sqrt(aa*bb)
	}
	for i, q := range queries {
		require.Len(t, scores[i], len(segments))
		for j, seg := range segments {
			require.InDelta(t, cosine(embed(q), embed(seg)), scores[i][j], 1e-9, "%q %q", q, seg)
		}
	}
	out, err := c.Match(context.Background(), segments, queries)
	require.NoError(t, err)
	for i := range queries {
		var want []int
		for j := range segments {
			if scores[i][j] >= 0.5 {
				want = append(want, j)
			}
		}
		require.Equal(t, want, out[i])
	}
	require.Equal(t, 0.5, c.MatchThreshold())
	require.Equal(t, embeddings.DefaultThreshold, (&embeddings.Client{}).MatchThreshold())
}

// TestAPIKeyHeader sends the key in the header named, as Azure OpenAI wants.
func TestAPIKeyHeader(t *testing.T) {
	t.Parallel()
	api, srv := newAPI(t)
	c := &embeddings.Client{URL: srv.URL, APIKey: "azure-key", APIKeyHeader: "api-key"}
	_, err := c.Match(context.Background(), segments, queries)
	require.NoError(t, err)
	require.Equal(t, "azure-key", api.requests[0].APIKey)
	require.Empty(t, api.requests[0].Auth)
}

// TestWithPolicy evaluates Semantic instructions through the client, and a
// failing service makes the evaluation fail.
func TestWithPolicy(t *testing.T) {
	t.Parallel()
	api, srv := newAPI(t)
	c := &embeddings.Client{URL: srv.URL}
	ins := []spec.Instruction{{ID: "db", Title: "Customer data", Action: spec.ActionBlock,
		Criticality: spec.CriticalityHigh, Trigger: spec.SemanticTrigger("customer database export")}}
	set, err := policy.Compile(ins, policy.Options{Semantic: c})
	require.NoError(t, err)
	res, err := set.Evaluate(context.Background(), []string{"Hi! Please export the customer database records.", "Thanks."})
	require.NoError(t, err)
	require.Equal(t, policy.OutcomeRequiresIntervention, res.Outcome)
	m := res.Reasons[0].Matches
	require.Len(t, m, 1)
	require.Equal(t, spec.MatchSpan{MessageIndex: 0, Start: 4, End: 48, Text: "Please export the customer database records.",
		Similarity: m[0].Similarity}, m[0])
	require.GreaterOrEqual(t, m[0].Similarity, embeddings.DefaultThreshold)
	require.LessOrEqual(t, m[0].Similarity, 1.0)

	api.answer = func(w http.ResponseWriter, _ []string) { http.Error(w, "down", http.StatusServiceUnavailable) }
	_, err = set.Evaluate(context.Background(), []string{"Another text."})
	require.Error(t, err)
	require.ErrorContains(t, err, "503")
	require.False(t, errors.Is(err, context.Canceled))
}

func TestConcurrentMatch(t *testing.T) {
	t.Parallel()
	_, srv := newAPI(t)
	c := &embeddings.Client{URL: srv.URL, QueryCacheSize: 2}
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for g := range 8 {
		wg.Go(func() {
			for i := range 10 {
				q := []string{queries[(g+i)%3], queries[(g+i+1)%3]}
				if _, err := c.Match(context.Background(), segments, q); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	require.NoError(t, <-errs)
}
